"""boardstream: Kafka stream-table joins on Spark, orchestrated by Airflow, proven lossless."""

__version__ = "0.1.0"
