"""The predictor registry: a predictor is found under the name it carries, a second one of that name is refused,
and an unknown name says which exist."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from harness.config.predict import PredictSpec
from harness.plan import ServerConfig
from harness.predict.predictor import PREDICTORS, predictor_class, predictor_names


@PREDICTORS.register
class Entry:
    """Registered here; applies to no server, so other tests' plans never reach it."""

    name: ClassVar[str] = "test-registry-entry"

    def __init__(self, spec: PredictSpec, cache_dir: Path) -> None:
        self.spec = spec

    def applies(self, server: ServerConfig) -> bool:
        return False


def test_a_predictor_is_found_under_its_name_and_carries_it() -> None:
    assert "test-registry-entry" in predictor_names()
    assert predictor_class("test-registry-entry") is Entry


def test_the_built_ins_are_declared_and_load() -> None:
    assert {"cpu-step", "aiconfigurator"} <= set(predictor_names())
    assert predictor_class("cpu-step").name == "cpu-step"
    assert PREDICTORS.source("aiconfigurator") == "harness.predict.aiconfigurator:AiConfigurator"


def test_a_name_taken_twice_is_refused() -> None:
    other = type("Other", (), {"name": "test-registry-entry"})
    with pytest.raises(ValueError, match="already registered"):
        PREDICTORS.register(other)
    with pytest.raises(ValueError, match="'cpu-step' is already registered by harness.predict.cpu_step:CpuStep"):
        PREDICTORS.register(type("Impostor", (), {"name": "cpu-step"}))


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="known predictors: .*test-registry-entry"):
        predictor_class("no-such-predictor")
