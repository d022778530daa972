#!/usr/bin/env bash
# kafka-run-class.sh as the distribution's, reduced: the JVM on libs/ with the *_OPTS variables.
base=$(cd "$(dirname "$0")/.." && pwd)
log4j=${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=$base/config/tools-log4j2.yaml}
# shellcheck disable=SC2086  # the *_OPTS are word lists, as in the distribution's script
exec java ${KAFKA_HEAP_OPTS:--Xmx256M} ${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseG1GC} $log4j \
    ${KAFKA_OPTS:-} -cp "$base/libs/*" "$@"
