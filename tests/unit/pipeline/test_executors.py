"""Executors: every built-in kind has both halves (its settings model and what runs its rounds) under one name, an
unknown kind lists the known ones, and an executor from outside the package is one module: its settings model
registered with the config layer and its rounds class in the registry, after which a matrix may name it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Literal

import pytest

from harness.config import executor as executor_config
from harness.config.executor import ExecutorBase, executor_models, register_executor_model
from harness.errors import ConfigError
from harness.pipeline import GroupWork, load_plan
from harness.pipeline.executors import EXECUTORS, LocalRounds, make_executor
from harness.plan import Plan
from harness.store import Store

from tests.support.matrices import BASE_MATRIX


def test_every_built_in_kind_has_settings_and_an_executor_of_that_name() -> None:
    assert set(executor_models()) == {"local", "slurm"} <= set(EXECUTORS.names())
    assert EXECUTORS.get("local") is LocalRounds
    assert EXECUTORS.source("slurm") == "harness.pipeline.slurm_rounds:SlurmRounds"


class _ToyExecutor(ExecutorBase):
    kind: Literal["toy"] = "toy"
    lanes: int = 1


class _ToyRounds:
    """Runs nothing: records the rounds it was handed."""

    name = "toy"
    local = True

    def __init__(self, plan: Plan, store: Store, source: str) -> None:
        self.plan = plan

    def preflight(self) -> None:
        pass

    async def run_round(self, work: Sequence[GroupWork], launch: int | None) -> None:
        pass


@pytest.fixture
def toy_executor(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The two halves registered in-process, gone after the test."""
    monkeypatch.setattr(executor_config._KINDS, "_members", dict(executor_config._KINDS._members))
    monkeypatch.setattr(EXECUTORS, "_added", {})
    register_executor_model(_ToyExecutor)
    EXECUTORS.register(_ToyRounds)
    yield


@pytest.mark.usefixtures("toy_executor")
def test_an_executor_from_outside_is_named_by_a_matrix(write_matrix: Callable[[str], Path], tmp_path: Path) -> None:
    plan = load_plan(write_matrix(BASE_MATRIX + "executor: {kind: toy, lanes: 3}\n"))
    assert isinstance(plan.matrix.executor, _ToyExecutor) and plan.matrix.executor.lanes == 3
    assert isinstance(make_executor(plan, Store(tmp_path / "out", plan.matrix.name), "m.yaml"), _ToyRounds)
    assert "toy" in executor_models()


@pytest.mark.usefixtures("toy_executor")
def test_its_settings_are_as_strict_as_a_built_ins(write_matrix: Callable[[str], Path]) -> None:
    path = write_matrix(BASE_MATRIX + "executor: {kind: toy, lane: 3}\n")
    with pytest.raises(ConfigError) as info:
        load_plan(path)
    assert "executor" in info.value.key and "lane" in str(info.value)


def test_an_unknown_kind_is_refused_with_the_known_ones(write_matrix: Callable[[str], Path]) -> None:
    with pytest.raises(ConfigError) as info:
        load_plan(write_matrix(BASE_MATRIX + "executor: {kind: kubernetes}\n"))
    assert "kubernetes" in str(info.value) and "local" in str(info.value) and "slurm" in str(info.value)
