"""The predictor registry: one entry per predictor (entry-point group ``harness.predictors``: ``harness.registry``).

A predictor answers for the cells of one server configuration at a time (so it may compute once per configuration
and read every concurrency from that). The rest of the harness reaches predictors only through ``predictor_for`` and
never imports a predictor's library; each predictor imports its own library lazily, inside ``predict``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Protocol

from harness.config.predict import PredictSpec
from harness.plan.cells import Cell, ServerConfig
from harness.predict.prediction_record import PredictionOutcome
from harness.registry import Registry


class Predictor(Protocol):
    """Predicts cells that share one server configuration."""

    name: ClassVar[str]

    def __init__(self, spec: PredictSpec, cache_dir: Path) -> None:
        """``spec``: the matrix's ``predict:`` section (its stated assumptions); ``cache_dir``: where it may keep
        files of its own, named after itself (the stage owns the folder)."""
        ...

    def applies(self, server: ServerConfig) -> bool:
        """Whether this predictor is the one for ``server`` (by hardware kind and runtime)."""
        ...

    def cache_key(self) -> str:
        """What, besides a cell's own identity, decides this predictor's answers (its version, its calibration)."""
        ...

    def predict(self, server: ServerConfig, cells: Sequence[Cell]) -> list[PredictionOutcome]:
        """One outcome per cell, in order; a cell it cannot answer is a ``NoPrediction`` with the reason."""
        ...


PREDICTORS: Registry[type[Predictor]] = Registry("predictor", "harness.predictors")
"""Every predictor, by the name ``predict.predictor`` uses (docs/extending/index.md). Where a matrix names none,
the first (by name) that ``applies`` to a server answers for it; the built-ins apply to disjoint hardware."""


def predictor_names() -> tuple[str, ...]:
    return PREDICTORS.names()


def predictor_class(name: str) -> type[Predictor]:
    return PREDICTORS.get(name)
