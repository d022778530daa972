"""Spark entry point of the driver class archive's build (boardstream.spark.class_archive): not a
job of its own; ``boardstream setup`` runs it once with its scratch directory as argument."""

import sys
from pathlib import Path

from boardstream.settings import Settings
from boardstream.spark.class_archive import warm_up
from boardstream.spark.session import spark_session

if __name__ == "__main__":
    spark = spark_session(Settings(), "boardstream-warm-up")
    warm_up(spark, Path(sys.argv[1]))
    spark.stop()
