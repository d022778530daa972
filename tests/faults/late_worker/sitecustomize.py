"""Makes Spark's driver-side Python worker of ``transformWithStateInPandas`` (the query run's
pre-init, ``pyspark.sql.streaming.transform_with_state_driver_worker``) start late, as on a loaded
machine, for its first ``BOARDSTREAM_LATE_WORKER_STARTS`` starts: each sleeps
``BOARDSTREAM_LATE_WORKER_S`` before Python goes on to import pyspark and connect back.

Put on a job's ``PYTHONPATH`` by tests/faults/test_cpu_hog.py; every other Python process of the
job (the driver, the executors' daemon and workers) is left alone. Starts are counted as files in
``BOARDSTREAM_LATE_WORKER_DIR``.
"""

import os
import sys
import time
import uuid

if "pyspark.sql.streaming.transform_with_state_driver_worker" in sys.orig_argv:
    starts = os.environ["BOARDSTREAM_LATE_WORKER_DIR"]
    if len(os.listdir(starts)) < int(os.environ["BOARDSTREAM_LATE_WORKER_STARTS"]):
        open(os.path.join(starts, uuid.uuid4().hex), "w").close()
        time.sleep(float(os.environ["BOARDSTREAM_LATE_WORKER_S"]))
