#!/usr/bin/env bash
# The distribution's defaults: the broker's log configuration and heap (which a container's
# memory limit must leave room for).
base=$(cd "$(dirname "$0")/.." && pwd)
export KAFKA_LOG4J_OPTS=${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=$base/config/log4j2.yaml}
export KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}
exec "$base/bin/kafka-run-class.sh" kafka.Kafka "$@"
