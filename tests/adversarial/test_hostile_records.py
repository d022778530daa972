"""Records no job can use, on the whole path: each becomes a dead letter with its reason, no
job stalls (a record larger than every limit included), and reconciliation accounts for every
one of them as dead-lettered and passes. The reasons themselves are pinned, record by record,
in tests/integration/test_parse_contract.py; here they meet the verdict."""

from __future__ import annotations

import base64
import json

from tests.adversarial.world import NOW, board, failures, reconcile
from tests.fixtures import new_database
from tests.pipeline import Pipeline

INT64_MAX = 2**63 - 1


def payload(board_id: str, **fields: object) -> bytes:
    record = {"id": board_id, "member_id": 1, "title": "t", "body": "b", "created_ts": NOW}
    return json.dumps(record | fields, ensure_ascii=False).encode()


HOSTILE = {  # key -> (value, the dead letter's reason)
    "huge": (payload("huge", body="x" * 1_500_000), "oversized: "),
    "trailing": (payload("trailing") + b" xyz", "value has trailing text after the JSON object"),
    "quoted": (payload("quoted", member_id="1"), "member_id must be a JSON integer"),
    "object": (payload("object", title={"a": 1}), "title must be a JSON string, got OBJECT"),
    "utf8": (payload("utf8", title="x").replace(b'"x"', b'"\xff"'), "value is not valid UTF-8"),
    "surrogate": (
        payload("surrogate", title="x").replace(b'"x"', b'"\\ud800"'),
        "value has an unpaired surrogate escape",
    ),
    "x" * 100: (payload("x" * 100), "id is 100 characters, more than 64"),
}


def test_hostile_records_are_dead_lettered_and_accounted(
    kafka, spark, postgres, tmp_path, request
) -> None:
    url = new_database(postgres, request)
    pipeline = Pipeline(kafka, spark, tmp_path, var_dir=tmp_path, database_url=url)
    pipeline.allow_records_up_to(pipeline.settings.board_topic, 2_000_000)
    pipeline.member(1, "m1", ts=NOW)
    pipeline.member(INT64_MAX, "top", ts=NOW)
    for i, (key, (value, _)) in enumerate(HOSTILE.items()):
        pipeline.send_large(pipeline.settings.board_topic, key.encode(), value, NOW + 1 + i)
    board(pipeline, "top", INT64_MAX, NOW + 20)  # the top of the id range is valid
    board(pipeline, "after", 1, NOW + 21)  # and the job goes on past every hostile record
    pipeline.join()
    pipeline.sink()

    reasons = {
        base64.b64decode(letter["key_base64"]).decode(): letter["error"]
        for letter in pipeline.dead_letters()
    }
    assert sorted(reasons) == sorted(HOSTILE)
    for key, (_, prefix) in HOSTILE.items():
        assert reasons[key].startswith(prefix), (key, reasons[key])
    assert sorted(pipeline.detail()) == ["after", "top"]

    result = reconcile(pipeline)
    assert failures(result) == {}, "\n".join(result.summary())
    counts = result.reconciliation.counts
    assert (counts["source"], counts["joined"], counts["dead_lettered"]) == (9, 2, 7)
    assert result.passed
