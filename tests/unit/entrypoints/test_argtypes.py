"""A domain's refusal in its own words reads, at the command line, under the flags' names."""

from __future__ import annotations

import pytest

from boardstream.entrypoints.argtypes import flag_message
from boardstream.errors import InvalidOptionError
from boardstream.generator.plan import GeneratorOptions


def test_each_option_named_becomes_its_flag_and_nothing_else_does() -> None:
    with pytest.raises(InvalidOptionError) as refused:
        GeneratorOptions(members=3, late_members=2, deletes=2)
    assert str(refused.value) == "late members plus deletes cannot exceed members"
    # "members" inside "late members" is not a flag of its own.
    assert flag_message(refused.value) == "--late-members plus --deletes cannot exceed --members"


def test_a_word_the_error_does_not_name_stays_a_word() -> None:
    error = InvalidOptionError("gap must be > 0 between sessions of a member", "gap")
    assert flag_message(error) == "--gap must be > 0 between sessions of a member"
