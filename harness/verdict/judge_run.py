"""The verdict stage: after the cells have run, record this run's lock and judge it against the baseline.

It writes two files the report reads and never recomputes: ``lock.json`` (this environment and run,
``harness.verdict.lock``) and ``gate.json`` (the gate's rows against the committed baseline, or why there was
nothing to compare with, and how this run's lock drifted from the committed one). After a run it first records the
run in the results history (``harness.history``), whose verdicts the gate then joins to the baseline's
(``harness.verdict.history_rule``). A history that cannot be opened or written costs the run its history verdicts,
never its results: the error is kept in ``gate.json`` and printed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter

from harness.calibration import read_calibration
from harness.errors import HistoryError
from harness.history import (
    DISABLED,
    HistoryJudgement,
    HistoryQuestion,
    Recorded,
    RunIdentity,
    Trend,
    judge_history,
    record,
    shown,
)
from harness.metrics.gateable import gated_metric
from harness.plan.cells import Cell, Plan
from harness.servers.expert_load_collectors import ExpertCounts
from harness.store import Store, write_atomic
from harness.stored_files import load_or_set_aside
from harness.telemetry import read_expert_load
from harness.verdict.baseline import GateError, read_baseline
from harness.verdict.gate import Against, GateResult, check
from harness.verdict.history_rule import with_history
from harness.verdict.lock import Drift, Lock, build_lock, drift, read_lock, write_lock


@dataclass(frozen=True, slots=True)
class HistoryState:
    """What the results history did for this verdict: where it is, what recording added, how many runs of the
    matrix it holds on this machine, the trends that changed (for the report's figure), or why it could not."""

    url: str
    """The database, password hidden."""
    recorded: Recorded | None = None
    runs: int = 0
    flat: int = 0
    """Gated figures whose history is long and flat."""
    changed: tuple[Trend, ...] = ()
    """Gated figures whose series has a change point at the newest runs."""
    error: str | None = None


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
    history: HistoryState | None = None
    """None when the history is off (``--history none``)."""


_GATE_JSON = TypeAdapter(GateVerdict)


def identity(lock: Lock, store: Store) -> RunIdentity:
    """The run as the history knows it: the store's run stamp (made now for a run from before stamps) and its lock."""
    stamp = store.begin_run(fresh=False)
    return RunIdentity(run_key=stamp.run_id, matrix=lock.matrix, matrix_sha256=lock.matrix_sha256,
                       hardware=lock.hardware, harness_version=lock.harness.version,
                       harness_commit=lock.harness.commit, started_at=stamp.started_at,
                       engines={name: f"{e.package or name} {e.package_version or 'unknown'}"
                                for name, e in lock.engines.items()})


def _expert_loads(cell: Cell, store: Store, launches: int) -> list[ExpertCounts | None]:
    """Each launch's stored expert load of ``cell`` (None where it has none); a run of one launch stores it in the
    cell's own directory."""
    found = []
    for launch in range(launches):
        record = read_expert_load(store.expert_load_path(cell, launch))
        if record is None and launches == 1:
            record = read_expert_load(store.expert_load_path(cell))
        found.append(record.counts if record is not None else None)
    return found


def _record(plan: Plan, store: Store, lock: Lock) -> Recorded:
    cells = [(cell, r) for cell in plan.cells if (r := store.read_result(cell)) is not None]
    experts = {r.cell_id: _expert_loads(cell, store, r.summary.launches if r.summary else 0) for cell, r in cells}
    return record(store.history_url, identity(lock, store), [r for _, r in cells],
                  read_calibration(store.calibration_path), experts)


def record_stored(plan: Plan, store: Store) -> Recorded:
    """Record the run stored under ``store`` (one the history could not take when it ran) as its own lock
    describes it, not as this environment would; HistoryError when there is no run or the database refuses it."""
    lock = read_lock(store.run_lock_path)
    if lock is None:
        raise HistoryError(f"{store.run_lock_path}: no finished run of {plan.matrix.name} is stored there to record\n"
                           "  fix: run the matrix first (`harness run MATRIX`), or pass the --out it ran with")
    return _record(plan, store, lock)


def _history(plan: Plan, store: Store, lock: Lock, record_run: bool) -> tuple[HistoryState, HistoryJudgement | None]:
    url = store.history_url
    recorded, error, judgement = None, None, None
    try:
        if record_run:
            recorded = _record(plan, store, lock)
        stamp = store.read_run_stamp()
        spec = plan.matrix.gates
        judgement = judge_history(url, HistoryQuestion(
            plan.matrix.name, lock.hardware.fingerprint, stamp.run_id if stamp else None,
            tuple(c.cell_id for c in plan.cells), {m: gated_metric(m).metric.direction for m in spec.metrics},
            spec.tolerance, spec.history))
    except HistoryError as exc:
        error = str(exc)
    if judgement is None:
        return HistoryState(shown(url), recorded, error=error), None
    return HistoryState(shown(url), recorded, judgement.runs, sum(t.verdict == "flat" for t in judgement.trends),
                        tuple(t for t in judgement.trends if t.changed), error), judgement


def judge(plan: Plan, store: Store, lock: Lock | None = None, *, baseline: Path | None = None,
          strict: bool = False, record_run: bool = False) -> GateVerdict:
    """Gate the stored run of ``plan`` against its baseline (``baseline``, else the matrix's or the committed one)
    and its history (recorded first when ``record_run``); a missing or refused baseline is a verdict too."""
    lock = lock or build_lock(plan, store)
    state, judgement = (None, None) if store.history_url == DISABLED else _history(plan, store, lock, record_run)
    path = baseline or store.baseline_path(plan.matrix.gates.baseline)
    committed = read_lock(store.committed_lock_path)
    result, error = None, None
    try:
        result = check(plan, store, Against(read_baseline(path), path, strict), plan.matrix.gates, lock,
                       now_machine_s=read_calibration(store.calibration_path).launch_seconds)
    except GateError as exc:
        error = str(exc)
    if result is not None and judgement is not None and plan.matrix.gates.history.use:
        result = with_history(result, plan, plan.matrix.gates, judgement)
    return GateVerdict(baseline=str(path), result=result, error=error, committed_lock=str(store.committed_lock_path),
                       drift=tuple(drift(committed, lock)) if committed else (), lock_committed=committed is not None,
                       history=state)


def write_verdicts(plan: Plan, store: Store, *, baseline: Path | None = None, strict: bool = False,
                   record_run: bool = False) -> GateVerdict:
    """Write this run's ``lock.json`` and ``gate.json`` (recording the run in the history first when
    ``record_run``: after a run, not after a re-judging); returns the gate's verdict."""
    lock = build_lock(plan, store)
    write_lock(lock, store.run_lock_path)
    verdict = judge(plan, store, lock, baseline=baseline, strict=strict, record_run=record_run)
    write_atomic(store.gate_path, _GATE_JSON.dump_json(verdict, indent=2))
    return verdict


def read_gate(store: Store) -> GateVerdict | None:
    """The stored ``gate.json``; None when the run has none (or one of an incompatible version)."""
    return load_or_set_aside(store.gate_path, _GATE_JSON.validate_json)
