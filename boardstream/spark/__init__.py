"""Spark session wiring: the Kafka connector jars and local defaults."""
