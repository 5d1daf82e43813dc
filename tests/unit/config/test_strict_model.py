"""The config models' base: a typo is an error naming the key, a validated value never changes, and a field added
later is declared so that it stays out of ids until set."""

from __future__ import annotations

from typing import ClassVar

import pytest
from pydantic import ValidationError

from harness.config.strict_model import StrictModel


class Section(StrictModel):
    size: int = 1


class Grown(StrictModel):
    _added_later: ClassVar[frozenset[str]] = frozenset({"width"})

    size: int = 1
    width: int | None = None


def test_an_unknown_key_is_an_error_that_names_it() -> None:
    with pytest.raises(ValidationError, match="sise") as caught:
        Section.model_validate({"sise": 2})
    assert caught.value.errors()[0]["type"] == "extra_forbidden"


def test_a_validated_model_cannot_be_changed() -> None:
    section = Section(size=2)
    with pytest.raises(ValidationError, match="frozen"):
        section.size = 3  # type: ignore[misc]
    assert section.size == 2


def test_fields_added_later_are_declared_per_model() -> None:
    assert StrictModel._added_later == frozenset() and Section._added_later == frozenset()
    assert Grown._added_later == {"width"} and "width" in Grown.model_fields
