"""boardstream: Kafka stream-table joins on Spark, orchestrated by Airflow, proven lossless."""

from boardstream.logs import quiet_libraries, verbose_requested

__version__ = "0.1.0"

# Before anything imports Great Expectations: it logs ~200 lines at INFO on import.
quiet_libraries(verbose_requested())
