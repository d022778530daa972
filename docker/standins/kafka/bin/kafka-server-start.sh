#!/usr/bin/env bash
# The distribution's default heap, which a container's memory limit must leave room for.
export KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}
exec "$(dirname "$0")/kafka-run-class.sh" kafka.Kafka "$@"
