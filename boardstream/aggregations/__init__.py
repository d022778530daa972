"""Stateful aggregations in the Kafka Streams mould (table counts with retraction, sessions,
windows), on the same streaming plumbing as the join: Kafka source, RocksDB state, DLQ, jobs."""
