"""What a real boardstream session does beyond Spark's defaults, where a unit test of its options
cannot tell whether Spark honours them."""

from __future__ import annotations

from pyspark.errors.utils import is_debugging_enabled
from pyspark.sql import functions as F


def test_dataframe_functions_record_no_python_call_sites(spark) -> None:
    """PySpark would inspect the stack and make about five gateway calls per DataFrame
    function to record its call site: the static option is in force, so it does neither."""
    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    assert spark.range(3).select(F.col("id") + 1).count() == 3
    assert is_debugging_enabled() is False
