"""The no-Docker local stack: a real KRaft Kafka broker and, on request, PostgreSQL."""
