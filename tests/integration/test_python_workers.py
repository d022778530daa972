"""Spark's Python workers import pyspark's bytecode from the archive Spark puts first on their
path (``bin/setup`` adds it, boardstream.spark.python_zip): they no longer compile pyspark at
each start, which made a late ``transformWithStateInPandas`` worker fail under load."""

from __future__ import annotations

from pyspark.sql.functions import udf

from boardstream.spark.submit import spark_home


def test_a_python_worker_imports_pyspark_from_its_archive_bytecode(spark) -> None:
    where = udf(lambda _: __import__("pyspark").__file__)
    (row,) = spark.range(1).select(where("id").alias("file")).collect()
    assert row.file == str(
        spark_home() / "python" / "lib" / "pyspark.zip" / "pyspark" / "__init__.pyc"
    )
