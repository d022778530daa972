"""The field types a declaration may give a record's fields: a short list, each a JSON form the
parser can hold a value to without coercing it, and each a column type a table can hold.

A record's JSON value is an object; a field may be absent or null unless it is ``required``;
fields the declaration does not name are ignored, so producers can add fields without breaking
the join.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from boardstream.pipelines.problems import Problem, unknown_key

# PostgreSQL's largest VARCHAR(n), and Spark's and PostgreSQL's common largest decimal.
MAX_CHARS = 10_485_760
MAX_PRECISION = 38


class Strict(BaseModel):
    """A part of a declaration: unknown keys refused (a typo is not a default), nothing coerced
    (``"10"`` is not a number, ``"yes"`` not a boolean), and immutable once read."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            known = list(cls.model_fields)
            for key in data:
                if key not in known:
                    raise unknown_key(key, known)
        return data


class _Field(Strict):
    required: bool = Field(default=False, description="absent or null is a dead letter")

    @property
    def json_form(self) -> str:
        """The JSON a value of this type is: a field the stream and the table both name is
        read once per record, so both must declare it in one form."""
        return "a JSON string"


class Text(_Field):
    """A JSON string of ``min_chars`` to ``max_chars`` code points, without U+0000 (which text
    columns cannot hold); a bounded one is a VARCHAR(max_chars) column."""

    type: Literal["text"]
    min_chars: int = Field(default=0, ge=0)
    max_chars: int | None = Field(default=None, ge=1, le=MAX_CHARS)

    @model_validator(mode="after")
    def _bounds_agree(self) -> Text:
        if self.max_chars is not None and self.min_chars > self.max_chars:
            raise Problem(
                f"min_chars {self.min_chars} is more than max_chars {self.max_chars}: no value "
                "could pass",
                "min_chars",
            )
        return self


class Int64(_Field):
    """A JSON integer literal (no quotes, fraction or exponent) from -2**63 to 2**63 - 1."""

    type: Literal["int64"]

    @property
    def json_form(self) -> str:
        return "a JSON integer"


class Double(_Field):
    """A JSON number (an integer too), read as the nearest IEEE 754 double, as JSON readers do
    (declare a decimal to keep every digit); one past the double's range is a dead letter."""

    type: Literal["double"]

    @property
    def json_form(self) -> str:
        return "a JSON number"


class Decimal(_Field):
    """A JSON number without exponent with at most ``precision`` digits, ``scale`` of them after
    the point: held exactly, never through a double; one that does not fit is a dead letter,
    never rounded."""

    type: Literal["decimal"]
    precision: int = Field(ge=1, le=MAX_PRECISION)
    scale: int = Field(default=0, ge=0)

    @property
    def json_form(self) -> str:
        return f"a JSON number for decimal({self.precision},{self.scale})"

    @model_validator(mode="after")
    def _scale_fits(self) -> Decimal:
        if self.scale > self.precision:
            raise Problem(
                f"scale {self.scale} is more than the precision {self.precision}", "scale"
            )
        return self


class Boolean(_Field):
    """A JSON ``true`` or ``false``."""

    type: Literal["boolean"]

    @property
    def json_form(self) -> str:
        return "a JSON boolean"


class Timestamp(_Field):
    """An instant: an ISO 8601 string (``iso8601``), or a JSON integer of milliseconds
    (``epoch_ms``) or microseconds (``epoch_us``) since 1970-01-01T00:00:00Z."""

    type: Literal["timestamp"]
    format: Literal["iso8601", "epoch_ms", "epoch_us"] = "iso8601"

    @property
    def json_form(self) -> str:
        return "a JSON string" if self.format == "iso8601" else "a JSON integer"


class Date(_Field):
    """A calendar date, an ISO 8601 string ``YYYY-MM-DD``."""

    type: Literal["date"]


_TYPES = (Text, Int64, Double, Decimal, Boolean, Timestamp, Date)
FieldType = Annotated[Union[_TYPES], Field(discriminator="type")]  # noqa: UP007 (a tuple)
TYPE_NAMES = tuple(get_args(kind.model_fields["type"].annotation)[0] for kind in _TYPES)
# The types a key may have: a state is kept per key, and a Kafka key is compared as its text.
KEY_TYPES = ("text", "int64")
