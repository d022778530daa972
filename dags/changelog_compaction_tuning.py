"""
### Changelog compaction tuning

Daily, and on demand: first verifies the changes earlier runs applied (re-measures the replay a
restore reads and logs it next to the before figures), then measures every selected compacted
topic, recommends cleaner settings within guardrails and applies them, each change logged in
`compaction_tuning_log` and reversible with `boardstream compaction rollback --change ID`.

Params: `dry_run` (measure and recommend only), `topics` / `exclude` (name patterns),
`max_replay_waste`, `restore_budget_s`, `max_consumer_downtime_ms`. The Kafka cluster is the
`kafka_default` connection's; the database is `BOARDSTREAM_DATABASE_URL`.
"""

from __future__ import annotations

from airflow.sdk import Param, get_current_context, task

from boardstream_airflow.dags import boardstream_dag

KAFKA_CONNECTION = "kafka_default"


@boardstream_dag(
    __doc__,
    "kafka",
    "compaction",
    dag_id="changelog_compaction_tuning",
    schedule="@daily",
    default_args={"retries": 1},
    params={
        "dry_run": Param(False, type="boolean", description="recommend only, alter nothing"),
        "topics": Param([], type="array", description="topic name patterns (empty: all)"),
        "exclude": Param([], type="array", description="patterns never touched"),
        "max_replay_waste": Param(0.1, type="number", exclusiveMinimum=0, exclusiveMaximum=1),
        "restore_budget_s": Param(300, type="number", exclusiveMinimum=0),
        "max_consumer_downtime_ms": Param(86_400_000, type="integer", minimum=0),
    },
)
def changelog_compaction_tuning() -> None:
    @task
    def verify_previous_changes() -> list[dict]:
        """Log the replay after each change an earlier run applied."""
        from boardstream import compaction
        from boardstream_airflow.hooks.kafka import BoardstreamKafkaHook

        hook = BoardstreamKafkaHook(KAFKA_CONNECTION)
        verified = []
        for change_id, after in compaction.verify(hook.get_conn, hook.settings(), None).items():
            verified.append(
                {"change_id": change_id, "records": after.records, "waste": after.waste}
            )
            print(
                f"change {change_id}: {after.records:,} records replayed, waste {after.waste:.1%}"
            )
        return verified

    @task
    def tune_compacted_topics() -> list[dict]:
        """Measure, recommend and (unless dry_run) apply; the log shows the table."""
        from boardstream import compaction
        from boardstream.compaction import tuning
        from boardstream.compaction.policy import Targets
        from boardstream_airflow.hooks.kafka import BoardstreamKafkaHook

        context = get_current_context()
        params = context["params"]
        hook = BoardstreamKafkaHook(KAFKA_CONNECTION)
        settings = hook.settings()
        execute = not params["dry_run"]
        selection = compaction.selection(settings, params["topics"], params["exclude"])
        targets = Targets(
            max_replay_waste=params["max_replay_waste"],
            restore_budget_s=params["restore_budget_s"],
            max_consumer_downtime_ms=params["max_consumer_downtime_ms"],
        )
        run_by = f"airflow:{context['dag'].dag_id}/{context['run_id']}"
        tunings = compaction.tune(hook.get_conn, settings, selection, targets, execute, run_by)
        print("\n".join(tuning.report(tunings, execute)))
        return [
            {
                "topic": t.measurement.topic,
                "records": t.measurement.records,
                "live_keys": t.measurement.live_keys,
                "waste": t.measurement.waste,
                "change_id": t.change_id,
                "changes": {p.setting: p.new_value for p in t.planned if p.changes},
            }
            for t in tunings
        ]

    verify_previous_changes() >> tune_compacted_topics()


changelog_compaction_tuning()
