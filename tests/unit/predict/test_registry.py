"""The predictor registry: a predictor registers beside its class under one name, a second registration of the name
is refused, and an unknown name says which exist."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from harness.config.predict import PredictSpec
from harness.plan import ServerConfig
from harness.predict import predictor_names, register_predictor
from harness.predict.registry import predictor_class


@register_predictor("test-registry-entry")
class Entry:
    """Registered here; applies to no server, so other tests' plans never reach it."""

    name: ClassVar[str]

    def __init__(self, spec: PredictSpec, cache_dir: Path) -> None:
        self.spec = spec

    def applies(self, server: ServerConfig) -> bool:
        return False


def test_a_predictor_is_found_under_its_name_and_carries_it() -> None:
    assert "test-registry-entry" in predictor_names()
    assert predictor_class("test-registry-entry") is Entry and Entry.name == "test-registry-entry"


def test_a_name_taken_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register_predictor("test-registry-entry")(type("Other", (), {}))


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="known: .*test-registry-entry"):
        predictor_class("no-such-predictor")
