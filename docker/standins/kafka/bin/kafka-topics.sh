#!/usr/bin/env bash
KAFKA_HEAP_OPTS= exec "$(dirname "$0")/kafka-run-class.sh" org.apache.kafka.tools.TopicCommand "$@"
