"""The regression gate's stored verdict and the locks, as the report shows them (sections "Regression gate" and
"Reproducing this report"). Both are read as ``harness gate`` wrote them; nothing is judged here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from harness.config.gates import HistorySpec
from harness.report.formatting import MISSING
from harness.store import Store
from harness.verdict.gate import GateResult
from harness.verdict.gate_row import GateRow
from harness.verdict.gate_table import interval_text
from harness.verdict.judge_run import GateVerdict, HistoryState
from harness.verdict.lock import Drift, EngineInfo, Lock, ModelInfo, read_lock

LARGEST_MOVES = 10
"""Rows of the table of the gated figures that moved most."""


@dataclass(frozen=True, slots=True)
class GateView:
    """The stored gate verdict: the comparison with the baseline, or why there is none."""

    result: GateResult | None
    source: str
    """The baseline compared with; when there is no comparison, why not."""
    moves: tuple[GateRow, ...]
    """The gated figures that moved most against the baseline, largest first."""
    tolerance_pct: float | None
    doubts: tuple[GateRow, ...] = ()
    """The inconclusive figures, noisiest first (their intervals straddle the tolerance)."""
    history: HistoryState | None = None
    """What the results history said (None: it is off)."""
    history_rule: HistorySpec | None = None
    trend_plot: str | None = None
    """The figure of the gated figures whose history stepped, relative to the report."""

    def interval(self, row: GateRow) -> str:
        """The change and its 95% interval, as the gate printed it."""
        return interval_text(row)


def _largest_moves(result: GateResult | None, count: int = LARGEST_MOVES) -> tuple[GateRow, ...]:
    moved = [r for r in result.rows if r.change_pct and math.isfinite(r.change_pct)] if result else []
    return tuple(sorted(moved, key=lambda r: -abs(r.change_pct or 0.0))[:count])


def gate_view(verdict: GateVerdict | None, rule: HistorySpec | None = None, plot: str | None = None) -> GateView:
    result = verdict.result if verdict else None
    if verdict is None:
        source = "the gate has not run"
    else:
        source = verdict.baseline if result else verdict.error or ""
    doubts = tuple(sorted(result.inconclusive, key=lambda r: -(r.noise or 0.0))) if result else ()
    return GateView(result=result, source=source, moves=_largest_moves(result),
                    tolerance_pct=result.tolerance * 100 if result else None, doubts=doubts[:LARGEST_MOVES],
                    history=verdict.history if verdict else None, history_rule=rule, trend_plot=plot)


@dataclass(frozen=True, slots=True)
class EngineRow:
    name: str
    engine: EngineInfo
    server_reported: str
    """The versions the engine's servers logged, or ``not recorded``."""


@dataclass(frozen=True, slots=True)
class ModelRow:
    id: str
    model: ModelInfo
    weights: str
    """How many weight files were hashed, or why none was."""


@dataclass(frozen=True, slots=True)
class Reproducibility:
    """This run's lock, the committed one it is held against, and how they differ."""

    lock: Lock
    run_lock: Path
    committed_lock: Lock | None
    lock_file: Path
    """Where the committed lock is (or would be) kept."""
    drift: tuple[Drift, ...]
    """Fields of this run's lock that differ from the committed one, as the gate stored them."""
    engines: tuple[EngineRow, ...]
    models: tuple[ModelRow, ...]


def _engines(lock: Lock) -> tuple[EngineRow, ...]:
    rows = []
    for name, engine in lock.engines.items():
        versions = dict.fromkeys(s.server_version for s in lock.servers.values()
                                 if s.runtime == name and s.server_version)
        rows.append(EngineRow(name, engine, ", ".join(v for v in versions if v) or "not recorded"))
    return tuple(rows)


def _weights(model: ModelInfo) -> str:
    if model.weights_sha256:
        return f"{len(model.weights_sha256)} file(s) hashed"
    return model.note or MISSING


def reproducibility(store: Store, verdict: GateVerdict | None) -> Reproducibility | None:
    """None when this run has no lock: the report is rendered after ``harness gate`` writes one."""
    lock = read_lock(store.run_lock_path)
    if lock is None:
        return None
    return Reproducibility(
        lock=lock, run_lock=store.run_lock_path, committed_lock=read_lock(store.committed_lock_path),
        lock_file=store.committed_lock_path, drift=verdict.drift if verdict else (), engines=_engines(lock),
        models=tuple(ModelRow(id, model, _weights(model)) for id, model in lock.models.items()))
