"""Generated records for any declared pipeline, from its declaration alone: each field a value
of its declared type within its bounds (an optional one absent now and then), the stream's id
unique, its reference the key of the row it names, its event time and the row's version time in
their declared forms on the generator's timeline; and malformed stream records, each breaking
the contract in one named way."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal as Exact

from boardstream.errors import InvalidOptionError
from boardstream.generator.kinds import Kinds
from boardstream.generator.timeline import record_ms, row_version_ms
from boardstream.joins import schema
from boardstream.pipelines import Pipeline
from boardstream.pipelines.fields import (
    Boolean,
    Date,
    Decimal,
    Double,
    FieldType,
    Int64,
    Text,
    Timestamp,
)

# Every flaw the stream's contract refuses, one each: not JSON, the reference of the wrong JSON
# type (an array), the reference absent, the reference of the key's other type, and a record
# past any size a record may have (an undeclared field, which the join would ignore).
FLAWS = ("not_json", "wrong_type", "missing_key_field", "key_of_other_type", "oversized")
OVERSIZED_BYTES = 300_000
LETTERS = "abcdefghijklmnopqrstuvwxyz"
TEXT_CHARS = 16  # the longest generated text, bounds allowing
ID_HEX_DIGITS = 24
OPTIONAL_ABSENT = 10  # one optional field in this many is left out


def kinds_of(pipeline: Pipeline) -> Kinds:
    """The manifest's words for ``pipeline``'s records: its topics' names in the singular."""
    contract = schema.Contract.of(pipeline)
    return Kinds(row=_singular(contract.table_label), record=_singular(contract.stream_label))


def _singular(label: str) -> str:
    word = label.replace("-", "_").replace(".", "_")
    return word[:-1] if word.endswith("s") and len(word) > 1 else word


class DeclaredRecords:
    """:class:`~boardstream.generator.plan.Records` of ``pipeline``."""

    flaws = FLAWS

    def __init__(self, pipeline: Pipeline, rng: random.Random, start_ms: int) -> None:
        self.pipeline = pipeline
        self.rng = rng
        self.start_ms = start_ms

    def key(self, row: int) -> bytes:
        return str(self._key_value(row)).encode()

    def _key_value(self, row: int) -> int | str:
        table = self.pipeline.table
        declared = table.fields[table.key]
        if isinstance(declared, Int64):
            return row
        assert isinstance(declared, Text)  # KEY_TYPES
        text = f"k{row}".rjust(declared.min_chars, "0")
        if declared.max_chars is not None and len(text) > declared.max_chars:
            raise InvalidOptionError(
                f"{table.key} holds at most {declared.max_chars} characters: too few for key "
                f"{text!r} of row {row}",
                "members",
            )
        return text

    def row(self, row: int, version: int) -> bytes:
        return self.row_with(row, row_version_ms(self.start_ms, row, version))

    def row_with(self, row: int, at_ms: int, **fields: object) -> bytes:
        """Row ``row``'s value, its version time ``at_ms`` (epoch ms): ``fields`` as given, the
        others drawn."""
        table = self.pipeline.table
        fixed = {table.key: self._key_value(row), table.version_time: at_ms, **fields}
        return _dumps(self._parts(table.fields, fixed))

    def record(self, index: int, row: int) -> tuple[bytes, bytes, int]:
        record_id = self._id()
        at = record_ms(self.start_ms, index, self.rng.randint(0, 999))
        return str(record_id).encode(), self.record_with(record_id, row, at), at

    def record_with(self, record_id: int | str, row: int, at_ms: int, **fields: object) -> bytes:
        """A stream record's value naming row ``row``, its event time ``at_ms`` (epoch ms):
        ``fields`` as given, the others drawn."""
        stream = self.pipeline.stream
        fixed = {
            stream.id: record_id,
            stream.join_on: self._key_value(row),
            stream.event_time: at_ms,
        }
        return _dumps(self._parts(stream.fields, {**fixed, **fields}))

    def malformed(self, flaw: str, number: int) -> tuple[bytes, bytes, int]:
        stream = self.pipeline.stream
        record_id = self._id()
        key = str(record_id).encode()
        at = record_ms(self.start_ms, 0, number)
        if flaw == "not_json":
            return key, b"\xff{not json " + key, at
        reference = stream.join_on
        fixed = {stream.id: record_id, reference: self._key_value(1), stream.event_time: at}
        parts = self._parts(stream.fields, fixed)
        if flaw == "wrong_type":
            parts[reference] = "[1,2]"
        elif flaw == "missing_key_field":
            del parts[reference]
        elif flaw == "key_of_other_type":
            parts[reference] = '"abc"' if isinstance(fixed[reference], int) else "12345"
        else:
            parts["padding"] = _json("x" * OVERSIZED_BYTES)
        return key, _dumps(parts), at

    def _id(self) -> int | str:
        stream = self.pipeline.stream
        declared = stream.fields[stream.id]
        if isinstance(declared, Int64):
            return self.rng.getrandbits(62)
        assert isinstance(declared, Text)
        digits = min(ID_HEX_DIGITS, declared.max_chars or ID_HEX_DIGITS)
        return f"{self.rng.getrandbits(4 * digits):0{digits}x}".rjust(declared.min_chars, "0")

    def _parts(self, fields: dict[str, FieldType], fixed: dict[str, object]) -> dict[str, str]:
        """Each of ``fields``' JSON text: ``fixed``'s values (a time in epoch ms) in their
        declared form, the others drawn, an optional one left out now and then."""
        parts = {}
        for name, declared in fields.items():
            if name in fixed:
                value = fixed[name]
                if isinstance(declared, Timestamp):
                    value = _instant(int(value), declared)  # type: ignore[call-overload]
            elif not declared.required and self.rng.randrange(OPTIONAL_ABSENT) == 0:
                continue
            else:
                value = self._value(declared)
            parts[name] = _json(value)
        return parts

    def _value(self, declared: FieldType) -> object:
        rng = self.rng
        match declared:
            case Text(min_chars=low, max_chars=high):
                top = TEXT_CHARS if high is None else min(high, TEXT_CHARS)
                length = rng.randint(low, max(low, top))
                return "".join(rng.choices(LETTERS, k=length))
            case Int64():
                return rng.randint(-1_000_000, 1_000_000)
            case Double():
                return round(rng.uniform(-1_000, 1_000), 3)
            case Decimal(precision=precision, scale=scale):
                whole = min(precision - scale, 6)
                units = rng.randrange(10 ** (whole + scale))
                return Exact(units).scaleb(-scale)
            case Boolean():
                return rng.random() < 0.5
            case Timestamp():
                return _instant(self.start_ms + rng.randrange(10**10), declared)
            case Date():
                day = datetime.fromtimestamp(self.start_ms / 1000, UTC).date()
                return (day + timedelta(days=rng.randrange(3_650))).isoformat()
        raise AssertionError(f"no value for {declared!r}")


def _dumps(parts: dict[str, str]) -> bytes:
    return (
        "{" + ",".join(f"{json.dumps(name)}:{text}" for name, text in parts.items()) + "}"
    ).encode()


def _instant(ms: int, declared: Timestamp) -> int | str:
    if declared.format == "epoch_ms":
        return ms
    if declared.format == "epoch_us":
        return ms * 1_000
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _json(value: object) -> str:
    """A value as JSON; a decimal as its digits (``12.30``), which json would write as a
    double or refuse."""
    if isinstance(value, Exact):
        return f"{value:f}"
    return json.dumps(value, ensure_ascii=False)
