"""The Spark provider's SparkSubmitOperator, told a boardstream job by name.

The master and deploy mode come from the ``spark_default`` connection (``local[2]`` locally, a
cluster's master elsewhere); the Kafka cluster from the Kafka provider's ``kafka_default``
connection; the connector jars, Python interpreter and environment from the core package, as
``boardstream job run`` uses them. Nothing is resolved at DAG parse time.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from boardstream.aggregations.presets import preset as aggregation_preset
from boardstream.spark.submit import application

# For DAGs of streaming jobs run available-now: a retry resumes from the checkpoint, losing
# nothing; the timeout bounds a run that cannot reach Kafka or the cluster.
RESUMABLE_JOB_ARGS = {
    "retries": 2,
    "retry_delay": timedelta(seconds=30),
    "execution_timeout": timedelta(hours=1),
}


class BoardstreamSparkSubmitOperator(SparkSubmitOperator):
    def __init__(
        self,
        *,
        job: str | None = None,
        preset: str | None = None,
        job_args: Sequence[str] = (),
        kafka_config_id: str = "kafka_default",
        **kwargs: Any,
    ) -> None:
        """``job`` names a job (``boardstream job list``); or ``preset`` one of the board
        domain's aggregations, whose arguments come from the settings at run time."""
        if (job is None) == (preset is None):
            raise ValueError("give exactly one of job and preset")
        if preset is not None:
            job = aggregation_preset(preset).job
        super().__init__(
            application=str(application(job)),
            name=preset or job,
            application_args=list(job_args),
            **kwargs,
        )
        self.preset = preset
        self.job = job
        self.kafka_config_id = kafka_config_id

    def execute(self, context: Any) -> None:
        from boardstream.spark.jvm_options import configure
        from boardstream.spark.submit import connector_jars, submit_conf, submit_env
        from boardstream_airflow.hooks.kafka import BoardstreamKafkaHook

        settings = BoardstreamKafkaHook(kafka_config_id=self.kafka_config_id).settings()
        self._refuse_a_live_checkpoint(settings, context)
        self.jars = ",".join(filter(None, [connector_jars(settings), self.jars]))
        conf = {
            **submit_conf(console=False),  # its output is the task log
            "spark.driver.memory": settings.spark_driver_memory,
            **(self.conf or {}),
        }
        self.env_vars = {**submit_env(settings), **(self.env_vars or {})}
        # spark-submit starts in this process's environment plus env_vars: a collector chosen
        # there (SPARK_SUBMIT_OPTS) is the driver's, and a second one would stop its JVM.
        self.conf = configure(conf, settings.jars_dir, environ={**os.environ, **self.env_vars})
        if self.preset is not None:
            preset_args = aggregation_preset(self.preset).job_args(settings)
            self.application_args = [*preset_args, *(self.application_args or [])]
        try:
            super().execute(context)
        except AirflowException:
            # A stream started between the check above and the job's own lease: the job was
            # refused for it, and the run is skipped or failed as if it had been seen first.
            self._refuse_a_live_checkpoint(settings, context)
            raise

    def _refuse_a_live_checkpoint(self, settings: Any, context: Any) -> None:
        """Refused before spark-submit when a live stream (board_detail_stream) owns this job's
        default checkpoint (``<checkpoint root>/<job>``): a scheduled run is skipped (catch-up
        is for when the stream is stopped), an explicit one fails, naming the stream's driver.
        The job itself would refuse too (its lease), but only after a JVM start. A lease whose
        driver was killed a moment ago is waited for, up to the lease's TTL."""
        from boardstream.spark.checkpoint_lease import live_holder

        owner = live_holder(settings, settings.checkpoint(self.job))
        if owner is None:
            return
        message = (
            f"{self.job}: a live stream owns its checkpoint: {owner.describe()}. Catch-up and "
            "backfill run when it is stopped (board_detail_stream_request, action=stop)."
        )
        if context["dag_run"].run_type == "scheduled":
            raise AirflowSkipException(message)
        raise AirflowFailException(message)
