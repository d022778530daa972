"""The table read type-strictly: a stored value of another type than its column's is reported
with its row and nulled, never coerced (SQLite stores whatever it is given).

Each column's type is its Spark type (a declared field's, :func:`~boardstream.joins.schema.
typed_as`). Where a database keeps a type in another form, the stored form is read back exactly
or refused: SQLite keeps a boolean as the integer 0 or 1 (SQLAlchemy's ``Boolean``), a date as
its ISO text, a decimal as an integer or a double whose shortest form has at most the column's
scale and precision (15 significant digits at most: ``sink.table.SQLITE_DECIMAL_DIGITS``). A
``2`` in a boolean column, ``12.345`` in a ``decimal(12,2)`` one or ``'soon'`` in a date one is
a mismatch: no driver's converter rounds or truthifies it into a value that would pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

_INT_RANGE = {"bigint": (-(2**63), 2**63 - 1), "int": (-(2**31), 2**31 - 1)}
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")
_ARROW = {
    "string": pa.string(),
    "bigint": pa.int64(),
    "int": pa.int32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "date": pa.date32(),
}
_PYTHON: dict[str, type] = {
    "string": str,
    "bigint": int,
    "int": int,
    "double": float,
    "boolean": bool,
    "date": date,
}
_MISMATCH = object()


@dataclass(frozen=True)
class TypeMismatch:
    row_id: str  # the row's key (the stream record's id)
    column: str
    value: str  # repr of what the table holds, cut to 60 characters

    def example(self) -> str:
        return f"{self.row_id} ({self.column}={self.value})"


def arrow_type(kind: str) -> pa.DataType:
    """The Arrow type a column of Spark type ``kind`` is read into."""
    if decimal := _DECIMAL.fullmatch(kind):
        return pa.decimal128(int(decimal[1]), int(decimal[2]))
    return _ARROW[kind]


def strict(
    values: list, ids: list, name: str, kind: str, sqlite: bool = False
) -> list[tuple[int, TypeMismatch]]:
    """Null every value of ``values`` (in place) that is not of type ``kind``, decode the ones
    a database keeps in another form (``sqlite``: see the module), and say which were nulled
    (by row, named by ``ids``). The common case, a column of the right type, costs one Arrow
    inference."""
    if _all_native(values, kind):
        return []
    found = []
    for index, value in enumerate(values):
        if value is None:
            continue
        decoded = _decoded(value, kind, sqlite)
        if decoded is _MISMATCH:
            row_id = value if ids is values else ids[index]
            found.append((index, TypeMismatch(str(row_id), name, repr(value)[:60])))
            values[index] = None
        else:
            values[index] = decoded
    return found


def _all_native(values: list, kind: str) -> bool:
    try:
        inferred = pa.array(values).type
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return False
    if inferred == pa.null() or (kind == "string" and inferred == pa.string()):
        return True
    if inferred == pa.int64() and kind in _INT_RANGE:
        low, high = _INT_RANGE[kind]
        present = [v for v in values if v is not None]
        return low <= min(present) and max(present) <= high
    return (kind == "double" and inferred == pa.float64()) or (
        kind == "boolean" and inferred == pa.bool_()
    )


def _decoded(value: Any, kind: str, sqlite: bool) -> Any:
    """``value`` as a ``kind``, or ``_MISMATCH``."""
    if decimal := _DECIMAL.fullmatch(kind):
        return _decimal(value, int(decimal[1]), int(decimal[2]), sqlite)
    if sqlite and kind == "boolean":
        return bool(value) if type(value) is int and value in (0, 1) else _MISMATCH
    if sqlite and kind == "date" and type(value) is str:
        try:
            parsed = date.fromisoformat(value)
        except ValueError:
            return _MISMATCH
        return parsed if parsed.isoformat() == value else _MISMATCH
    if type(value) is not _PYTHON[kind]:
        return _MISMATCH
    low, high = _INT_RANGE.get(kind, (None, None))
    if low is not None and not low <= value <= high:
        return _MISMATCH
    return value


def _decimal(value: Any, precision: int, scale: int, sqlite: bool) -> Any:
    if type(value) is Decimal:
        exact = value
    elif sqlite and type(value) in (int, float):
        try:
            exact = Decimal(repr(value))  # a double's shortest form: its digits as written
        except InvalidOperation:
            return _MISMATCH
    else:
        return _MISMATCH
    if not exact.is_finite():
        return _MISMATCH
    _, digits, exponent = exact.as_tuple()
    assert isinstance(exponent, int)
    past = -exponent - scale  # digits past the scale: a value the column cannot hold
    if past > 0 and any(digits[-past:]):
        return _MISMATCH
    quantized = exact.quantize(Decimal(1).scaleb(-scale))
    if len(quantized.as_tuple().digits) > precision:
        return _MISMATCH
    return quantized
