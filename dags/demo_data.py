"""
### Demo data

On demand: produces a seeded generator load into `member` and `board`, with every case the join
must handle. Params: `members`, `boards`, `seed` (same seed, same records), `update_ratio`
(member updates per member), `deletes` (member tombstones), `late_members` (members produced
after their boards), `orphans` (boards whose member never comes), `malformed` (records of each
malformed kind), `production_scale` (442,128 members and 447,017 boards, overriding the counts).
Returns the counts per kind; the manifest (every key per kind) is written under
`BOARDSTREAM_VAR_DIR/manifests/`. The Kafka cluster is the `kafka_default` connection's.
"""

from __future__ import annotations

from airflow.sdk import Param, get_current_context, task

from boardstream_airflow.dags import boardstream_dag


@boardstream_dag(
    __doc__,
    "demo",
    dag_id="demo_data",
    schedule=None,
    default_args={"retries": 0},  # a retry would produce the load twice
    params={
        "members": Param(5_000, type="integer", minimum=0),
        "boards": Param(8_000, type="integer", minimum=0),
        "seed": Param(42, type="integer"),
        "update_ratio": Param(0.2, type="number", minimum=0, maximum=100),
        "deletes": Param(50, type="integer", minimum=0),
        "late_members": Param(40, type="integer", minimum=0),
        "orphans": Param(25, type="integer", minimum=0),
        "malformed": Param(10, type="integer", minimum=0),
        "production_scale": Param(False, type="boolean"),
    },
)
def demo_data() -> None:
    @task
    def produce() -> dict[str, int]:
        from boardstream.generator.manifest import default_path
        from boardstream.generator.plan import GeneratorOptions, production_scale
        from boardstream.generator.producer import produce
        from boardstream_airflow.hooks.kafka import BoardstreamKafkaHook

        params = dict(get_current_context()["params"])
        if params.pop("production_scale"):
            params.update(production_scale())
        options = GeneratorOptions(**params)
        settings = BoardstreamKafkaHook().settings()
        manifest = produce(settings, options, default_path(settings.var_dir, options.seed))
        return manifest.counts

    produce()


demo_data()
