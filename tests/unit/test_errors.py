"""The errors a user can fix (boardstream/errors.py): one family the CLI catches to print a
message without a traceback, and InvalidOptionError, which is also a ValueError (so validation
code that expects ValueError keeps working) and names the options concerned."""

from __future__ import annotations

import pytest

from boardstream.errors import (
    BoardstreamError,
    BrokerUnreachableError,
    InvalidOptionError,
    KafkaAuthenticationError,
    UnknownTopicError,
)


@pytest.mark.parametrize(
    "error",
    [BrokerUnreachableError, KafkaAuthenticationError, UnknownTopicError, InvalidOptionError],
)
def test_every_error_is_a_boardstream_error(error: type[Exception]) -> None:
    assert issubclass(error, BoardstreamError)
    with pytest.raises(BoardstreamError, match=r"^the message$"):
        raise error("the message")


def test_the_family_is_an_exception_but_not_a_value_error() -> None:
    assert issubclass(BoardstreamError, Exception)
    assert not issubclass(BoardstreamError, ValueError)
    assert not issubclass(UnknownTopicError, ValueError)


def test_an_invalid_option_is_a_value_error_naming_its_options() -> None:
    error = InvalidOptionError("max record bytes must be > 0, got 0", "max record bytes", "x")
    assert isinstance(error, ValueError)
    assert str(error) == "max record bytes must be > 0, got 0"
    assert error.args == ("max record bytes must be > 0, got 0",)
    assert error.options == ("max record bytes", "x")


def test_an_invalid_option_may_name_none() -> None:
    error = InvalidOptionError("refusing to start")
    assert error.options == ()
    with pytest.raises(ValueError, match=r"^refusing to start$"):
        raise error
