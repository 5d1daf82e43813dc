"""The predictor registry: one entry per predictor, registered beside its class.

A predictor answers for the cells of one server configuration at a time (so it may compute once per configuration
and read every concurrency from that). The rest of the harness reaches predictors only through ``predictor_for`` and
never imports a predictor's library; each predictor imports its own library lazily, inside ``predict``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar, Protocol, TypeVar

from harness.config.predict import PredictSpec
from harness.plan.cells import Cell, ServerConfig
from harness.predict.record import PredictionOutcome


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


_PREDICTORS: dict[str, type[Predictor]] = {}
P = TypeVar("P", bound=type)


def register_predictor(name: str) -> Callable[[P], P]:
    """Class decorator: make the predictor findable under ``name``; the entry sits beside its class."""

    def register(cls: P) -> P:
        if name in _PREDICTORS:
            raise ValueError(f"predictor {name!r} is registered twice")
        setattr(cls, "name", name)  # noqa: B010  (P is any class: mypy cannot see the attribute)
        _PREDICTORS[name] = cls
        return cls

    return register


def predictor_names() -> tuple[str, ...]:
    return tuple(_PREDICTORS)


def predictor_class(name: str) -> type[Predictor]:
    try:
        return _PREDICTORS[name]
    except KeyError:
        raise KeyError(f"unknown predictor {name!r}; known: {', '.join(_PREDICTORS)}") from None
