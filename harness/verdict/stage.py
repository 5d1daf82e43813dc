"""The verdict stage: after the cells have run, record this run's lock and judge it against the baseline.

It writes two files the report reads and never recomputes: ``lock.json`` (this environment and run,
``harness.verdict.lock``) and ``gate.json`` (the gate's rows against the committed baseline, or why there was
nothing to compare with, and how this run's lock drifted from the committed one).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from harness.calibration import read_calibration
from harness.plan.cells import Plan
from harness.store import Store, write_atomic
from harness.verdict.baseline import GateError, read_baseline
from harness.verdict.gate import GateResult, check
from harness.verdict.lock import Drift, Lock, build_lock, drift, read_lock, write_lock


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """What ``gate.json`` holds: the comparison, or the reason there is none, and the lock's drift."""

    baseline: str
    """The baseline file compared with (or looked for)."""
    result: GateResult | None
    error: str | None
    """Why there is no comparison (no baseline, one of another matrix); None when ``result`` is set."""
    committed_lock: str
    drift: tuple[Drift, ...]
    """Fields of this run's lock that differ from the committed lock (empty when none is committed)."""
    lock_committed: bool


_GATE_JSON = TypeAdapter(GateVerdict)


def judge(plan: Plan, store: Store, lock: Lock | None = None, *, baseline: Path | None = None,
          strict: bool = False) -> GateVerdict:
    """Gate the stored run of ``plan`` against its baseline (``baseline``, else the matrix's or the committed one);
    a missing or refused baseline is a verdict too."""
    lock = lock or build_lock(plan, store)
    path = baseline or store.baseline_path(plan.matrix.gates.baseline)
    committed = read_lock(store.committed_lock_path)
    result, error = None, None
    try:
        result = check(plan, store, read_baseline(path), plan.matrix.gates, lock, source=path, strict=strict,
                       now_machine_s=read_calibration(store.calibration_path).launch_seconds)
    except GateError as exc:
        error = str(exc)
    return GateVerdict(baseline=str(path), result=result, error=error, committed_lock=str(store.committed_lock_path),
                       drift=tuple(drift(committed, lock)) if committed else (), lock_committed=committed is not None)


def write_verdicts(plan: Plan, store: Store, *, baseline: Path | None = None, strict: bool = False) -> GateVerdict:
    """Write this run's ``lock.json`` and ``gate.json``; returns the gate's verdict."""
    lock = build_lock(plan, store)
    write_lock(lock, store.run_lock_path)
    verdict = judge(plan, store, lock, baseline=baseline, strict=strict)
    write_atomic(store.gate_path, _GATE_JSON.dump_json(verdict, indent=2))
    return verdict


def read_gate(store: Store) -> GateVerdict | None:
    """The stored ``gate.json``; None when the run has none (or one of an incompatible version)."""
    try:
        return _GATE_JSON.validate_json(store.gate_path.read_text())
    except (FileNotFoundError, ValidationError):
        return None
