"""Kafka plumbing on confluent-kafka: admin (topics) and client configuration."""
