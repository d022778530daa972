"""The board ⋈ member join on a real broker and real Spark, run available-now as Airflow runs it."""

from __future__ import annotations

import base64
import hashlib
import json
import time

import pytest

from boardstream.entrypoints.argtypes import flag_message
from boardstream.errors import BoardstreamError
from boardstream.generator.plan import TABLE, GeneratorOptions, Plan
from boardstream.joins.job import ENGINES, JoinJobConfig
from boardstream.joins.job import QUERY_NAME as JOIN_QUERY
from boardstream.pipelines import shipped
from boardstream.reconcile.layout import ReconcileLayout
from boardstream.reconcile.reads.readers import pending
from boardstream.spark.progress import ProgressListener
from boardstream.stream_progress import ProgressStore
from boardstream.supervision.lag import committed_offsets, source_lag
from tests.pipeline import Pipeline, consume_all, query


@pytest.fixture
def pipeline(kafka, spark, tmp_path, request):
    """Every join case on the default engine; the cases where the engines' Spark wiring differs
    (timers across batches and runs, dead letters, the accounting of every board) on each
    engine (``EACH_ENGINE``). The per-member semantics of both are held equal by the property
    test in test_join_equivalence.py."""
    return Pipeline(kafka, spark, tmp_path, engine=getattr(request, "param", JoinJobConfig.engine))


SHIPPED = ReconcileLayout.of(shipped("board_detail"))
EACH_ENGINE = pytest.mark.parametrize("pipeline", ENGINES, indirect=True)


def test_member_updates_before_a_board_reach_it_and_later_ones_do_not_rewrite(
    pipeline, t0: int
) -> None:
    pipeline.member(1, "first", t0)
    pipeline.board("a" * 24, 1, t0 + 10)
    pipeline.member(1, "second", t0 + 20)
    pipeline.board("b" * 24, 1, t0 + 30)
    pipeline.join()
    detail = pipeline.detail()
    assert {k: v["nickname"] for k, v in detail.items()} == {"a" * 24: "first", "b" * 24: "second"}
    row = detail["a" * 24]
    assert row["member_id"] == 1 and row["title"] == f"title {'a' * 24}"
    assert (row["board_partition"], row["member_partition"]) != (None, None)
    assert row["member_offset"] == 0  # provenance: the first member version of partition's log

    pipeline.member(1, "third", t0 + 40)
    pipeline.join()
    assert pipeline.detail() == detail  # nothing re-emitted, nothing rewritten
    assert pipeline.unmatched() == {} and pipeline.dead_letters() == []


def test_a_late_member_is_joined_with_the_boards_that_waited_for_it(pipeline, t0: int) -> None:
    pipeline.board("late00000000000000000000", 2, t0)
    pipeline.board("late11111111111111111111", 2, t0 + 1)
    pipeline.join(unmatched_timeout_ms=600_000)
    assert pipeline.detail() == {}
    pipeline.member(2, "late", t0 + 5)
    pipeline.join(unmatched_timeout_ms=600_000)
    assert {k: v["nickname"] for k, v in pipeline.detail().items()} == {
        "late00000000000000000000": "late",
        "late11111111111111111111": "late",
    }
    assert pipeline.unmatched() == {}


def test_missing_or_deleted_members_end_unmatched_after_the_timeout(pipeline, t0: int) -> None:
    pipeline.board("orphan000000000000000000", 3, t0 + 1)
    pipeline.member(4, "gone", t0 + 2)
    pipeline.tombstone(4, t0 + 3)
    pipeline.board("deleted00000000000000000", 4, t0 + 4)
    pipeline.join(unmatched_timeout_ms=2_000)
    assert pipeline.detail() == {} and pipeline.unmatched() == {}

    time.sleep(2.5)  # past the timeout: the next batch with data fires the timers
    pipeline.member(99, "unrelated", t0 + 6)
    pipeline.join(unmatched_timeout_ms=2_000)
    assert pipeline.unmatched() == {
        "orphan000000000000000000": "member_missing",
        "deleted00000000000000000": "member_deleted",
    }
    assert pipeline.detail() == {}


def test_as_of_mode_is_event_time_correct_under_out_of_order_updates(pipeline, t0: int) -> None:
    pipeline.member(1, "v2", t0, modified_at="2025-03-01T00:00:00")
    pipeline.member(1, "v1", t0 + 1, modified_at="2025-02-01T00:00:00")  # older, arrives later
    feb_15 = 1_739_577_600_000  # 2025-02-15T00:00:00Z
    mar_15 = 1_741_996_800_000  # 2025-03-15T00:00:00Z
    pipeline.board("feb000000000000000000000", 1, t0 + 2, created_ts=feb_15)
    pipeline.board("mar000000000000000000000", 1, t0 + 3, created_ts=mar_15)
    pipeline.join(mode="as-of")
    detail = pipeline.detail()
    assert detail["feb000000000000000000000"]["nickname"] == "v1"
    assert detail["mar000000000000000000000"]["nickname"] == "v2"
    assert detail["feb000000000000000000000"]["member_modified_at"] == "2025-02-01T00:00:00"


@EACH_ENGINE
def test_malformed_records_go_to_the_dlq_and_the_job_keeps_going(pipeline, t0: int) -> None:
    plan = Plan(GeneratorOptions(members=20, boards=30, seed=5, malformed=10))
    sent: dict[str, str] = {}
    for ts, record in enumerate(plan, start=t0):
        topic = (
            pipeline.settings.member_topic
            if record.topic == TABLE
            else pipeline.settings.board_topic
        )
        pipeline.send(topic, record.key, record.value, ts)
        if record.kind.startswith("malformed:"):
            sent[record.key.decode()] = record.kind.split(":")[1]
    pipeline.send(pipeline.settings.member_topic, b"not-a-number", b'{"member_id": 1}', t0 + 100)
    pipeline.send(pipeline.settings.board_topic, b"x" * 24, b'{"id": "y"}', t0 + 101)
    pipeline.join()

    letters = pipeline.dead_letters()
    by_key = {base64.b64decode(d["key_base64"]).decode(): d for d in letters}
    assert len(letters) == 12
    expected_error = {
        "not_json": "value is not valid UTF-8",
        "wrong_type": "member_id must be a JSON integer in the int64 range, got ARRAY",
        "missing_key_field": "missing field member_id (absent or null)",
        "member_id_text": "member_id must be a JSON integer in the int64 range, got STRING",
        "oversized": "oversized: ",
    }
    for key, flaw in sent.items():
        assert by_key[key]["error"].startswith(expected_error[flaw]), (flaw, by_key[key]["error"])
        assert by_key[key]["source_topic"] == pipeline.settings.board_topic
    assert by_key["not-a-number"]["error"] == "member key is not an integer: not-a-number"
    assert by_key["x" * 24]["error"] == "missing field member_id (absent or null)"
    original = next(d for d in letters if d["error"] == "value is not valid UTF-8")
    assert base64.b64decode(original["value_base64"]).startswith(b"\xff{not json")
    assert {"partition", "offset", "timestamp_ms"} <= set(original)

    # Everything well formed was joined, and the query is healthy for the next run.
    assert len(pipeline.detail()) == 30
    pipeline.board("z" * 24, 1, t0 + 200)
    pipeline.join()
    assert len(pipeline.detail()) == 31


@EACH_ENGINE
def test_every_source_board_is_joined_unmatched_or_dead_lettered(
    pipeline, postgres, tmp_path, t0: int
) -> None:
    pipeline.settings = pipeline.settings.model_copy(update={"database_url": postgres.database_url})
    options = GeneratorOptions(
        members=300,
        boards=500,
        seed=11,
        update_ratio=0.3,
        deletes=8,
        late_members=6,
        orphans=7,
        malformed=10,
    )
    manifest = {}
    for ts, record in enumerate(Plan(options), start=t0):
        topic = (
            pipeline.settings.member_topic
            if record.topic == TABLE
            else pipeline.settings.board_topic
        )
        pipeline.send(topic, record.key, record.value, ts)
        manifest.setdefault(record.kind, set()).add(record.key.decode())
    pipeline.join(unmatched_timeout_ms=2_000)
    time.sleep(2.5)
    pipeline.member(10_000, "tick", t0 + 10_000)
    pipeline.join(unmatched_timeout_ms=2_000)

    detail, unmatched = pipeline.detail(), pipeline.unmatched()
    dead = {base64.b64decode(d["key_base64"]).decode() for d in pipeline.dead_letters()}
    boards = set().union(*(keys for kind, keys in manifest.items() if "boards" in kind))
    malformed = set().union(
        *(keys for kind, keys in manifest.items() if kind.startswith("malformed"))
    )
    assert set(detail) | set(unmatched) | dead == boards | malformed
    assert not set(detail) & set(unmatched) and not (set(detail) | set(unmatched)) & dead
    assert set(unmatched) == manifest["orphan_boards"] | manifest["boards_of_deleted_members"]
    assert {unmatched[k] for k in manifest["orphan_boards"]} == {"member_missing"}
    assert manifest["late_boards"] <= set(detail)
    assert dead == malformed

    sql = "select board_id, nickname, detail_partition, detail_offset from board_detail"
    pipeline.sink()
    first = {
        row.board_id: tuple(row)
        for row in query(postgres.database_url, sql)
        if row.board_id in boards
    }
    pipeline.sink()  # a second run finds nothing new and changes nothing
    again = {
        row.board_id: tuple(row)
        for row in query(postgres.database_url, sql)
        if row.board_id in boards
    }
    assert again == first
    assert {k: row[1] for k, row in first.items()} == {k: v["nickname"] for k, v in detail.items()}


def pending_boards(pipeline) -> list[str]:
    """Board ids waiting in the join's state store, as of its last committed batch (read as
    reconciliation reads them)."""
    checkpoint = pipeline.workdir / f"{pipeline.settings.board_topic}-join"
    last_batch = max(int(f.name) for f in (checkpoint / "commits").iterdir() if f.name.isdigit())
    waiting = pending(pipeline.spark, SHIPPED, str(checkpoint), last_batch)
    return sorted(row.board_id for row in waiting.collect())


@EACH_ENGINE
def test_boards_waiting_across_batches_meet_their_members_beside_a_tick(pipeline, t0: int) -> None:
    """A tick or a dead letter has no member id; pandas converted the Arrow batch that held it
    and other buckets' rows to one frame, turning their member ids into floats the state could
    not store: with this seed and these batch sizes 204 boards waited for ever (found by the
    checkpoint-reuse fault scenario). Every board must meet its member, batch after batch."""
    options = GeneratorOptions(
        members=1_500, boards=3_000, seed=20261125, update_ratio=0.2, late_members=15
    )
    for ts, record in enumerate(Plan(options), start=t0):
        topic = pipeline.settings.member_topic if record.topic == TABLE else None
        pipeline.producer.produce(
            topic or pipeline.settings.board_topic, record.value, record.key, timestamp=ts
        )
    assert pipeline.producer.flush(30) == 0
    pipeline.join(max_offsets_per_trigger=1_500, state_buckets=16)
    assert len(pipeline.detail()) == 3_000
    assert pending_boards(pipeline) == []


@EACH_ENGINE
def test_members_with_the_smallest_ids_are_joined_beside_dead_letters_and_a_tick(
    pipeline, t0: int
) -> None:
    """The JVM operator groups dead letters and ticks under the two smallest int64 keys, which
    are valid member ids too (found by a unit test reading the operator): their members' rows
    must be joined, not dead-lettered or dropped as ticks."""
    smallest, next_smallest = -(2**63), -(2**63) + 1
    pipeline.member(smallest, "min", t0)
    pipeline.member(next_smallest, "min+1", t0 + 1)
    pipeline.board("s" * 24, smallest, t0 + 2)
    pipeline.board("t" * 24, next_smallest, t0 + 3)
    pipeline.send(pipeline.settings.board_topic, b"bad", b"{not json", t0 + 4)
    pipeline.join()  # available-now: its tick travels under next_smallest's key
    detail = pipeline.detail()
    assert {k: (v["member_id"], v["nickname"]) for k, v in detail.items()} == {
        "s" * 24: (smallest, "min"),
        "t" * 24: (next_smallest, "min+1"),
    }
    assert pipeline.unmatched() == {}
    letters = pipeline.dead_letters()
    assert [(base64.b64decode(d["key_base64"]), d["error"]) for d in letters] == [
        (b"bad", "value is not valid JSON")
    ]


@EACH_ENGINE
def test_an_available_now_run_without_input_still_times_out_waiting_boards(
    pipeline, t0: int
) -> None:
    pipeline.board("quiet000000000000000000", 77, t0)
    pipeline.join(unmatched_timeout_ms=2_000)
    assert pipeline.unmatched() == {} and pending_boards(pipeline) == ["quiet000000000000000000"]

    time.sleep(2.5)
    pipeline.join(unmatched_timeout_ms=2_000)  # no new input: only the run's own tick
    assert pipeline.unmatched() == {"quiet000000000000000000": "member_missing"}
    assert pending_boards(pipeline) == []
    pipeline.join(unmatched_timeout_ms=2_000)  # and it is emitted once
    assert len(pipeline.records(pipeline.settings.unmatched_topic)) == 1
    assert pipeline.detail() == {} and pipeline.dead_letters() == []
    ticks = consume_all(pipeline.settings, pipeline.settings.join_tick_topic)
    assert len(ticks) == 3  # one per available-now run


def test_a_record_too_large_for_an_envelope_is_dead_lettered_truncated(pipeline, t0: int) -> None:
    """1.5 MB (past the 1 MiB producer limit a whole-record dead letter would break): the
    batch completes, the dead letter keeps a prefix, the exact size and digest."""
    pipeline.allow_records_up_to(pipeline.settings.board_topic, 2_000_000)
    big = json.dumps({"id": "big", "member_id": 1, "created_ts": 1, "body": "x" * 1_500_000})
    pipeline.send_large(pipeline.settings.board_topic, b"big", big.encode(), t0)
    pipeline.member(1, "one", t0 + 1)
    pipeline.board("after00000000000000000000", 1, t0 + 2)

    pipeline.join()
    [letter] = pipeline.dead_letters()
    assert letter["error"] == f"oversized: {len(big)} bytes > {256 * 1024}"
    assert letter["truncated"] is True
    assert letter["value_bytes"] == len(big)
    assert letter["value_sha256"] == hashlib.sha256(big.encode()).hexdigest()
    assert base64.b64decode(letter["value_base64"]) == big.encode()[: 256 * 1024]
    assert (letter["key_base64"], letter["key_bytes"]) == (base64.b64encode(b"big").decode(), 3)
    assert list(pipeline.detail()) == ["after00000000000000000000"]


def test_the_join_refuses_to_start_when_a_dead_letter_could_not_fit(pipeline) -> None:
    with pytest.raises(BoardstreamError) as refused:
        pipeline.join(max_record_bytes=600 * 1024)
    message = str(refused.value)
    assert message.startswith("refusing to start: a record could be too large to write")
    assert f"max.message.bytes of topic {pipeline.settings.dlq_topic} (1,048,588)" in message
    assert "max.request.size (kafka.max.request.size) (1,048,576)" in message
    assert not (pipeline.workdir / f"{pipeline.settings.board_topic}-join").exists()  # no query
    # Said in the domain's words, which the job's command line turns into its flag.
    assert message.endswith("Raise the limit, or lower the max record bytes.")
    assert flag_message(refused.value).endswith("or lower the --max-record-bytes.")


def test_the_lag_health_counts_is_what_the_join_has_not_committed(pipeline, t0: int) -> None:
    """Counted at the broker against where the join's newest stored batch ended (its progress,
    as its driver's listener stores it): 0 once a run committed everything, each record produced
    since, and 0 again when the next run reads them."""
    settings = pipeline.settings
    sources = (settings.member_topic, settings.board_topic)
    store = ProgressStore(f"sqlite:///{pipeline.workdir / 'progress.db'}")
    listener = ProgressListener(store)

    def lag() -> int | None:
        newest = store.read(JOIN_QUERY, last=1)
        return source_lag(settings, JOIN_QUERY, committed_offsets(newest), sources)

    def join() -> None:
        stored = len(store.read(JOIN_QUERY))
        pipeline.join()
        deadline = time.monotonic() + 30  # the listener hears of the last batch after it ends
        while len(store.read(JOIN_QUERY)) == stored and time.monotonic() < deadline:
            time.sleep(0.1)

    pipeline.spark.streams.addListener(listener)
    try:
        pipeline.member(1, "m1", t0)
        assert lag() == 1  # nothing committed yet
        pipeline.board("c" * 24, 1, t0 + 1)
        join()
        assert lag() == 0
        pipeline.member(2, "m2", t0 + 2)
        for i in range(3):
            pipeline.board(f"{i}" * 24, 2, t0 + 3 + i)
        assert lag() == 4
        join()
        assert lag() == 0
    finally:
        pipeline.spark.streams.removeListener(listener)
