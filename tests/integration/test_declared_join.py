"""A pipeline other than board_detail through the JVM join and the sink, from its declaration
alone: the shipped ``orders`` (text keys under another name than the stream's reference,
decimals, a date, epoch microseconds, an as-of join, a sink that renames and drops fields) on
real Kafka topics, Spark and SQLite, every outcome exact: joined as of the order's time, joined
once its late customer comes, unmatched once its wait is over, a dead letter naming what broke,
and the joined records loaded into ``order_customer`` with their types' values unchanged;
an order for a deleted customer (a null value on a text key) unmatched as deleted."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from datetime import date
from decimal import Decimal
from pathlib import Path

import sqlalchemy as sa
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from boardstream import joins
from boardstream.generator.plan import TABLE, GeneratorOptions, Plan
from boardstream.joins.job import JoinJobConfig
from boardstream.joins.member_table import JoinOptions
from boardstream.joins.topics import Deployed, JoinTopics
from boardstream.kafka.clients import admin_client
from boardstream.pipelines import Pipeline, shipped
from boardstream.reconcile.checks.spark_checks import BALANCE, FAILING
from boardstream.reconcile.evidence.run_ledger import FULL, INCREMENTAL, RunLedger
from boardstream.reconcile.repair import repair
from boardstream.reconcile.run import reconcile_once
from boardstream.reconcile.target import ReconcileTarget
from boardstream.settings import Settings
from boardstream.sink.job import SinkJobConfig, SinkTarget
from tests.fixtures import cli
from tests.pipeline import consume_all, run_sink
from tests.unit.pipelines.declarations import changed, write

ORDERS = shipped("orders")
_runs = itertools.count()


def topics_for(settings: Settings) -> JoinTopics:
    prefix = f"decl{next(_runs)}"
    topics = JoinTopics(
        *(f"{prefix}-{part}" for part in ("orders", "customers", "tick", "j", "u", "dlq"))
    )
    admin = admin_client(settings)  # held: a collected client fails its futures
    # Kept forever: the records are stamped in 1970, past any retention.
    config = {"retention.ms": "-1"}
    created = admin.create_topics(
        [NewTopic(name, 2, 1, config=config) for name in vars(topics).values()]
    )
    for future in created.values():
        future.result(30)
    return topics


def run(spark, settings: Settings, topics: JoinTopics, checkpoint: Path) -> None:
    """The join job's query available-now on its checkpoint, to the end of its input: its
    output sizes checked, its checkpoint guarded, a tick sent first (which fires the waits
    that are over)."""
    config = JoinJobConfig(
        options=JoinOptions.of(ORDERS.join, unmatched_timeout_ms=1),
        query="orders-join",
        checkpoint=checkpoint,
    )
    query = joins.start(spark, settings, config, Deployed(ORDERS, topics))
    query.awaitTermination()
    assert query.exception() is None, query.exception()


def values(settings: Settings, topic: str) -> dict[str, dict]:
    return {key.decode(): json.loads(value) for key, value in consume_all(settings, topic)}


def test_orders_join_with_their_customer_as_of_their_time(kafka, spark, tmp_path) -> None:
    topics = topics_for(kafka)
    producer = Producer({**kafka.to_confluent(), "acks": "all"})

    def send(topic: str, key: str, value: str | None, ts: int) -> None:
        producer.produce(topic, key=key.encode(), value=value, timestamp=ts)

    customer = '{{"id": "c1", "name": "Ann", "email": "a@x", "credit_limit": {limit}, ' \
        '"vip": {vip}, "since": "2020-02-29", "updated_at": {at}}}'  # fmt: skip
    send(topics.table, "c1", customer.format(limit="100.50", vip="true", at=1_000), 1_000)
    send(topics.table, "c1", customer.format(limit="200.00", vip="false", at=5_000), 5_000)
    order = '{{"order_id": "{id}", "customer_id": "{c}", "amount": {amount}, "gift": true, ' \
        '"weight_kg": 1.5, "note": "n", "placed_at": {us}}}'  # fmt: skip
    send(topics.stream, "o1", order.format(id="o1", c="c1", amount="12.30", us=3_000_000), 10_000)
    send(topics.stream, "o2", order.format(id="o2", c="c1", amount="7", us=6_000_500), 10_001)
    send(topics.stream, "o3", order.format(id="o3", c="c9", amount="1.00", us=1), 10_002)
    send(topics.stream, "o4", order.format(id="o4", c="c1", amount="1.234", us=1), 10_003)
    send(topics.stream, "o5", order.format(id="o5", c="c2", amount="5.50", us=9_000_000), 10_004)
    assert producer.flush(30) == 0
    checkpoint = tmp_path / "join"
    run(spark, kafka, topics, checkpoint)
    assert set(values(kafka, topics.joined)) == {"o1", "o2"}

    # c2 comes; the next run's tick fires the waits that are over.
    c2 = '{"id": "c2", "name": "Bo", "credit_limit": 1, "updated_at": 8000}'
    send(topics.table, "c2", c2, 20_000)
    assert producer.flush(30) == 0
    run(spark, kafka, topics, checkpoint)

    joined = values(kafka, topics.joined)
    assert joined == {
        "o1": {  # placed at 3 s: the customer as of 1 s
            "order_id": "o1", "customer_id": "c1", "customer_name": "Ann", "amount": 12.30,
            "credit_limit": 100.50, "vip": True, "customer_since": "2020-02-29", "gift": True,
            "placed_at": 3_000_000, "stream_partition": joined["o1"]["stream_partition"],
            "stream_offset": joined["o1"]["stream_offset"], "stream_timestamp_ms": 10_000,
            "table_partition": joined["o1"]["table_partition"],
            "table_offset": joined["o1"]["table_offset"],
        },
        "o2": joined["o2"],
        "o5": joined["o5"],
    }  # fmt: skip
    assert joined["o2"]["credit_limit"] == 200.0 and joined["o2"]["vip"] is False  # as of 5 s
    assert joined["o5"]["customer_name"] == "Bo" and "vip" not in joined["o5"]  # null: left out
    assert "weight_kg" not in joined["o1"] and "note" not in joined["o1"]  # the sink drops them
    assert values(kafka, topics.unmatched) == {
        "o3": {
            "reason": "member_missing", "order_id": "o3", "customer_id": "c9", "amount": 1.0,
            "gift": True, "placed_at": 1,
            "stream_partition": values(kafka, topics.unmatched)["o3"]["stream_partition"],
            "stream_offset": values(kafka, topics.unmatched)["o3"]["stream_offset"],
            "stream_timestamp_ms": 10_002,
        }
    }  # fmt: skip
    (dead,) = consume_all(kafka, topics.dead_letters)
    letter = json.loads(dead[1])
    assert (dead[0], letter["source_topic"]) == (b"o4", topics.stream)
    assert letter["error"] == "amount does not fit decimal(12,2) without rounding: 1.234"
    # A decimal's digits as the record gave them (JSON numbers read above as floats).
    raw = dict(consume_all(kafka, topics.joined))
    assert b'"amount":12.30,' in raw[b"o1"] and b'"credit_limit":100.50,' in raw[b"o1"]

    # The sink loads the joined records; a record that is not JSON is its dead letter.
    producer.produce(topics.joined, key=b"junk", value=b"{not json", timestamp=30_000)
    assert producer.flush(30) == 0
    settings = kafka.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'orders.db'}"})
    target = SinkTarget(ORDERS, topics)
    config = SinkJobConfig(query="orders-sink", checkpoint=tmp_path / "sink")
    run_sink(spark, settings, config, target)
    engine = sa.create_engine(settings.database)
    with engine.connect() as connection:
        loaded = connection.execute(sa.select(target.table.table)).mappings().all()
    rows = {row["order_id"]: dict(row) for row in loaded}
    assert set(rows) == {"o1", "o2", "o5"}
    assert {k: rows["o1"][k] for k in ("amount", "credit_limit", "vip", "customer_since")} == {
        "amount": Decimal("12.30"),
        "credit_limit": Decimal("100.50"),
        "vip": True,
        "customer_since": date(2020, 2, 29),
    }
    assert rows["o5"]["vip"] is None and rows["o2"]["amount"] == Decimal("7.00")
    for order_id, row in rows.items():
        record = joined[order_id]
        assert {c: row[c] for c in ("stream_offset", "table_offset", "placed_at")} == {
            c: record[c] for c in ("stream_offset", "table_offset", "placed_at")
        }
        assert row["joined_offset"] is not None
    letters = [json.loads(value) for _, value in consume_all(kafka, topics.dead_letters)]
    assert sorted((d["source_topic"], d["error"]) for d in letters) == [
        (topics.joined, "not an orders record (not a JSON object)"),  # the sink's
        (topics.stream, "amount does not fit decimal(12,2) without rounding: 1.234"),  # the join's
    ]
    run_sink(spark, settings, config, target)  # nothing new: nothing loaded or dead-lettered
    assert len(consume_all(kafka, topics.dead_letters)) == 2

    # A null value deletes customer c1 (a text key): an order for it after the deletion waits,
    # then leaves unmatched as deleted, not missing.
    producer.produce(topics.table, key=b"c1", value=None, timestamp=40_000)
    send(topics.stream, "o6", order.format(id="o6", c="c1", amount="3", us=50_000_000), 50_000)
    assert producer.flush(30) == 0
    run(spark, kafka, topics, checkpoint)
    run(spark, kafka, topics, checkpoint)
    unmatched = values(kafka, topics.unmatched)
    assert {order_id: record["reason"] for order_id, record in unmatched.items()} == {
        "o3": "member_missing",
        "o6": "member_deleted",
    }
    joined_keys = {key for key, _ in consume_all(kafka, topics.joined)}
    assert joined_keys == {b"o1", b"o2", b"o5", b"junk"}  # nothing joined since

    # A full reconciliation run, from the declaration alone, kept in orders' own store: every
    # order in one outcome, and the table against the joined records.
    checking = ReconcileTarget.of(Deployed(ORDERS, topics))
    full = reconcile(spark, settings, checking, tmp_path, FULL)
    assert (full.kind, full.passed) == (FULL, True), full.summary()
    assert balance(full) == {
        "source": 6, "read": 6, "joined": 3, "unmatched": 2, "dead_lettered": 1
    }  # fmt: skip
    counts = full.reconciliation.counts
    assert (counts["expected_table_rows"], counts["sink_dead_lettered"]) == (3, 1)
    assert sorted(full.reconciliation.table_snapshot.itertuples(index=False, name=None)) == [
        ("o1", "c1"),
        ("o2", "c1"),
        ("o5", "c2"),
    ]
    assert full.table_slice == {
        "table": "order_customer",
        "after": None,
        "through": None,
        "rows": 3,
    }

    repaired_from_a_copy(spark, settings, topics, checking, checkpoint, tmp_path)

    # An incremental run reads only what came since: a new order for c2, joined and loaded.
    send(topics.stream, "o7", order.format(id="o7", c="c2", amount="2", us=60_000_000), 60_000)
    assert producer.flush(30) == 0
    run(spark, kafka, topics, checkpoint)
    run_sink(spark, settings, config, target)
    more = reconcile(spark, settings, checking, tmp_path, INCREMENTAL)
    assert (more.kind, more.passed) == (INCREMENTAL, True), more.summary()
    assert balance(more) == {
        "source": 7, "read": 7, "joined": 4, "unmatched": 2, "dead_lettered": 1
    }  # fmt: skip
    assert more.covered is not None  # it read the one new order
    assert sum(end - start for start, end in more.covered[topics.stream].values()) == 1

    # A row altered in the table: the next incremental run finds it, by its order id.
    with engine.begin() as connection:
        table = target.table.table
        connection.execute(
            table.update().where(table.c.order_id == "o5").values(amount=Decimal("9.99"))
        )
    tampered = reconcile(spark, settings, checking, tmp_path, INCREMENTAL)
    assert not tampered.passed
    findings = tampered.reconciliation.findings
    assert {k: f.examples for k, f in findings.items() if f.count and k in FAILING} == {
        "mismatched": ["o5"]
    }
    runs = RunLedger.of("orders").recent_runs(engine)
    assert [run["status"] for run in runs] == ["FAILED", "PASSED", "PASSED"]
    assert not sa.inspect(engine).has_table("board_detail_reconciliation_run")


def repaired_from_a_copy(
    spark, settings: Settings, topics: JoinTopics, checking, checkpoint: Path, tmp_path: Path
) -> None:
    """As if the join had skipped o1 (joined) and o3 (unmatched): copies of the two outputs
    without them, loaded by their own sink into their own database, reconcile FAILED with both
    missing; repair joins them again with the operator's own code, from the declaration alone,
    to the same records, and the next run PASSES. o1's customer was updated after it: only the
    declared as-of join (its version at the order's time) gives the same record; a latest
    join (repair's mode before it read the declaration's) gives its newest, credit 200.00."""
    copy = replace(topics, joined=f"{topics.joined}-copy", unmatched=f"{topics.unmatched}-copy")
    admin = admin_client(settings)
    created = admin.create_topics(
        [
            NewTopic(name, 2, 1, config={"retention.ms": "-1"})
            for name in (copy.joined, copy.unmatched)
        ]
    )
    for future in created.values():
        future.result(30)
    producer = Producer({**settings.to_confluent(), "acks": "all"})
    for source, into, skipped in (
        (topics.joined, copy.joined, b"o1"),
        (topics.unmatched, copy.unmatched, b"o3"),
    ):
        for key, value in consume_all(settings, source):
            if key != skipped:
                producer.produce(into, key=key, value=value)
    assert producer.flush(30) == 0
    elsewhere = settings.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'copy.db'}"})
    sink_config = SinkJobConfig(query="orders-copy-sink", checkpoint=tmp_path / "copy-sink")
    run_sink(spark, elsewhere, sink_config, SinkTarget(ORDERS, copy))
    target = ReconcileTarget.of(Deployed(ORDERS, copy))

    def reconciled():
        return reconcile_once(
            spark, elsewhere, "test", checkpoint, tmp_path / "copy-sink", kind=FULL, target=target
        )

    found = reconciled()
    findings = found.reconciliation.findings
    assert {k: f.examples for k, f in findings.items() if f.count and k in FAILING} == {
        "missing": ["o1", "o3"]
    }
    done = repair(spark, elsewhere, found.run_id, join_checkpoint=checkpoint, target=target)
    assert done == {"rejoined": 2, "reloaded": 2, "deleted_extra": 0}
    after = reconciled()
    assert after.passed, "\n".join(after.summary())
    for source, into, id_ in (
        (topics.joined, copy.joined, b"o1"),
        (topics.unmatched, copy.unmatched, b"o3"),
    ):
        assert [v for k, v in consume_all(settings, into) if k == id_] == [
            v for k, v in consume_all(settings, source) if k == id_
        ]  # the same join code gives the same record
    assert not sa.inspect(sa.create_engine(elsewhere.database)).has_table("board_detail")


def test_a_generated_data_set_has_the_outcomes_its_manifest_says(kafka, spark, tmp_path) -> None:
    """The generator's seeded data set from orders' declaration alone (customers updated,
    deleted and late, orders of customers never produced, malformed orders), each record
    stamped with its time on the generator's timeline: every order in the outcome its kind
    says, as-of, the joined ones loaded, and a full reconciliation PASSED with that balance."""
    topics = topics_for(kafka)
    options = GeneratorOptions(
        members=40,
        boards=80,
        seed=3,
        update_ratio=0.25,
        deletes=4,
        late_members=4,
        orphans=4,
        malformed=5,
    )
    plan = Plan(options, ORDERS)
    producer = Producer({**kafka.to_confluent(), "acks": "all"})
    kinds: dict[str, set[str]] = {}
    for record in plan:
        topic = topics.table if record.topic == TABLE else topics.stream
        producer.produce(topic, key=record.key, value=record.value, timestamp=record.at_ms)
        kinds.setdefault(record.kind, set()).add(record.key.decode())
    assert producer.flush(30) == 0
    named = plan.kinds
    checkpoint = tmp_path / "join"
    run(spark, kafka, topics, checkpoint)
    run(spark, kafka, topics, checkpoint)  # its tick fires the waits that are over

    joined = values(kafka, topics.joined)
    assert set(joined) == kinds[named.records] | kinds[named.late_records]
    reasons = {key: record["reason"] for key, record in values(kafka, topics.unmatched).items()}
    assert reasons == {
        **dict.fromkeys(kinds[named.orphans], "member_missing"),
        **dict.fromkeys(kinds[named.of_deleted], "member_deleted"),
    }
    malformed = {k for kind, keys in kinds.items() if kind.startswith("malformed:") for k in keys}
    assert {key.decode() for key, _ in consume_all(kafka, topics.dead_letters)} == malformed

    settings = kafka.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'gen.db'}"})
    target = SinkTarget(ORDERS, topics)
    run_sink(spark, settings, SinkJobConfig(query="gen-sink", checkpoint=tmp_path / "sink"), target)
    engine = sa.create_engine(settings.database)
    with engine.connect() as connection:
        loaded = connection.execute(sa.select(target.table.table.c.order_id)).scalars().all()
    assert sorted(loaded) == sorted(joined)

    checking = ReconcileTarget.of(Deployed(ORDERS, topics))
    full = reconcile(spark, settings, checking, tmp_path, FULL)
    assert full.passed, full.summary()
    assert balance(full) == {
        "source": options.boards + options.malformed,
        "read": options.boards + options.malformed,
        "joined": len(joined),
        "unmatched": len(reasons),
        "dead_lettered": options.malformed,
    }


def reconcile(spark, settings: Settings, target: ReconcileTarget, tmp_path: Path, kind: str):
    """A recorded run of ``target``, its checkpoints the test's."""
    join, sink = tmp_path / "join", tmp_path / "sink"
    return reconcile_once(spark, settings, "test", join, sink, kind=kind, target=target)


def balance(result) -> dict[str, int]:
    counts = result.reconciliation.counts
    return {kind: counts[kind] for kind in BALANCE if counts[kind]}


def test_the_jobs_run_a_declared_pipeline_by_name(kafka, tmp_path) -> None:
    """`boardstream job run board-detail-join -- --pipeline NAME`, the sink's, `boardstream
    reconcile --pipeline NAME`, `boardstream repair --pipeline NAME` and `boardstream state
    show --pipeline NAME`, as docs/COMMANDS.md writes them: spark-submit, the pipeline read
    from BOARDSTREAM_PIPELINES_DIR, its declared topics, its own queries, default checkpoints
    (``<name>-join``, ``<name>-sink``) and store."""
    declarations = tmp_path / "pipelines"
    declarations.mkdir()
    data = changed({"name": "orders_cli", "stream.topic": "named-orders", "table.topic": "named-c"})
    write(declarations, "orders_cli.yml", data)
    topics = JoinTopics.declared(Pipeline.model_validate(data))
    admin = admin_client(kafka)
    created = admin.create_topics(
        [NewTopic(name, 1, 1, config={"retention.ms": "-1"}) for name in vars(topics).values()]
    )
    for future in created.values():
        future.result(30)
    producer = Producer({**kafka.to_confluent(), "acks": "all"})
    customer = '{"id": "c1", "name": "Ann", "credit_limit": 5.10, "updated_at": 1000}'
    producer.produce(topics.table, key=b"c1", value=customer, timestamp=1_000)
    order = '{"order_id": "o1", "customer_id": "c1", "amount": 2.50, "placed_at": 3000000}'
    producer.produce(topics.stream, key=b"o1", value=order, timestamp=4_000)
    assert producer.flush(30) == 0
    env = {
        "BOARDSTREAM_PIPELINES_DIR": str(declarations),
        "BOARDSTREAM_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}",
        "BOARDSTREAM_VAR_DIR": str(tmp_path / "var"),  # the default checkpoints under it
    }
    for job in ("join", "sink"):
        run = cli(
            kafka,
            *("job", "run", f"board-detail-{job}", "--", "--pipeline", "orders_cli"),
            timeout=600,
            extra_env=env,
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert [key for key, _ in consume_all(kafka, topics.joined)] == [b"o1"]
    engine = sa.create_engine(env["BOARDSTREAM_DATABASE_URL"])
    with engine.connect() as connection:
        rows = connection.execute(sa.text("select order_id, amount from order_customer")).all()
    assert [tuple(row) for row in rows] == [("o1", 2.5)]

    # `boardstream reconcile --pipeline NAME`: orders_cli's checks, in orders_cli's own store,
    # find the row deleted from its table; `boardstream repair --pipeline NAME` puts it back.
    with engine.begin() as connection:
        connection.execute(sa.text("delete from order_customer where order_id = 'o1'"))
    assert sorted(p.name for p in (tmp_path / "var" / "checkpoints").iterdir()) == [
        "orders-cli-join",
        "orders-cli-sink",
    ]
    checked = cli(
        kafka, *("reconcile", "--pipeline", "orders_cli", "--full"), timeout=600, extra_env=env
    )
    assert checked.returncode == 1, checked.stdout[-3000:] + checked.stderr[-3000:]
    assert "reconciliation run 1 (full): FAILED" in checked.stdout.splitlines(), checked.stdout
    assert "missing_in_table: o1" in checked.stdout
    repaired = cli(
        kafka,
        *("repair", "--run", "1", "--pipeline", "orders_cli"),
        timeout=600,
        extra_env=env,
    )
    assert repaired.returncode == 0, repaired.stdout[-3000:] + repaired.stderr[-3000:]
    assert "rejoined: 0, reloaded: 1, deleted_extra: 0" in repaired.stdout.splitlines()
    assert "reconciliation run 2 (full): PASSED" in repaired.stdout.splitlines()
    assert [r["status"] for r in RunLedger.of("orders_cli").recent_runs(engine)] == [
        "PASSED",
        "FAILED",
    ]
    with engine.connect() as connection:
        rows = connection.execute(sa.text("select order_id, amount from order_customer")).all()
    assert [tuple(row) for row in rows] == [("o1", 2.5)]
    assert not sa.inspect(engine).has_table(RunLedger.of("board_detail").run_table.name)

    # `boardstream state show --pipeline NAME`: its join's state, found by the table's key.
    state = cli(kafka, *("state", "show", "--pipeline", "orders_cli", "--key", "c1"), extra_env=env)
    assert state.returncode == 0, state.stdout[-3000:] + state.stderr[-3000:]
    keyed = [line for line in state.stdout.splitlines() if line.startswith("    key ")]
    assert len(keyed) == 1 and keyed[0].startswith("    key c1 → "), state.stdout
    assert '"name": "Ann"' in keyed[0] or '"name":"Ann"' in keyed[0], keyed[0]
    unknown = cli(kafka, *("state", "show", "--pipeline", "nope"), extra_env=env)
    assert unknown.returncode == 2, unknown.stdout + unknown.stderr
    (line,) = unknown.stderr.strip().splitlines()
    assert line.startswith("boardstream: error: --pipeline nope: ") and "orders_cli" in line, line
