"""Regression gates: a stored run against ``lock/<matrix>.baseline.json``, metric by metric, each in its direction.

A baseline holds every directional metric of every cell, one value per repeat: each repeat of the cell within
the promoted run (``repeats:`` in the matrix) and each further run added with ``harness baseline --add-repeat``,
with the provenance of the run it came from. A gated metric regresses when it is worse than the *worst* baseline
repeat by more than the matrix's tolerance (default 10%), so the noise the repeats showed widens the band instead
of failing the gate. A cell that passed in the baseline and failed (or
was not run) now is a regression; so is a cell whose parity verdict failed when the matrix checks parity.

Provenance: a baseline of another matrix is refused (a harness error). Another matrix hash, harness version or
machine is flagged with what differs and compared anyway (the seed's bar is that another engineer's clone
reproduces the numbers), unless ``strict`` refuses it. Exit codes: 0 pass, 1 regression, 2 harness error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.config.matrix import GateSpec
from harness.errors import ConfigError, HarnessError
from harness.metrics.summary import METRICS, METRICS_BY_NAME, CellSummary, LatencyStats, Metric
from harness.parity.cell_parity import find_cell_parity
from harness.plan.cells import Plan
from harness.store import Store, now_iso, write_atomic
from harness.verdict.lock import HardwareInfo, Lock

LATENCY_STATS = ("median", "p90", "p99")


class GateError(HarnessError):
    """The gate cannot compare: no baseline, an unreadable one, or one of another matrix."""


@dataclass(frozen=True, slots=True)
class GatedMetric:
    """A figure the gate can judge: a declared metric, and for latency distributions one statistic of it."""

    name: str
    metric: Metric
    stat: str | None

    def value(self, summary: CellSummary) -> float | None:
        holder: Any = summary
        for part in self.metric.name.split("."):
            holder = getattr(holder, part, None) if holder is not None else None
        if isinstance(holder, LatencyStats):
            holder = getattr(holder, self.stat or "median")
        return float(holder) if isinstance(holder, int | float) else None


def _gateable() -> tuple[str, ...]:
    """Every directional scalar metric, and the median / p90 / p99 of every latency distribution."""
    names: list[str] = []
    for metric in METRICS:
        if metric.direction == "neutral" or metric.name == "speculation.per_position":
            continue
        names += [f"{metric.name}.{s}" for s in LATENCY_STATS] if metric.unit == "ms" else [metric.name]
    return tuple(names)


def gated_metric(name: str) -> GatedMetric:
    """Resolve ``output_throughput`` or ``ttft_ms.p99``; ValueError lists what can be gated."""
    if name not in GATEABLE:
        raise ValueError(f"{name!r} is not a gateable metric; gateable: {', '.join(GATEABLE)}")
    if name in METRICS_BY_NAME:
        return GatedMetric(name, METRICS_BY_NAME[name], None)
    base, _, stat = name.rpartition(".")
    return GatedMetric(name, METRICS_BY_NAME[base], stat)


GATEABLE = _gateable()


def check_gate_metrics(spec: GateSpec, source: str) -> None:
    """Every name in ``gates.metrics`` is a gateable metric, or a ConfigError names it (before anything runs)."""
    for index, name in enumerate(spec.metrics):
        try:
            gated_metric(name)
        except ValueError as exc:
            raise ConfigError(source, f"gates.metrics[{index}]", str(exc),
                              "use one of the gateable metrics listed, or remove it") from None


class BaselineCell(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    status: Literal["ok", "failed"]
    values: dict[str, list[float | None]]
    """Gateable metric -> one value per promoted repeat."""


class Baseline(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    matrix: str
    matrix_sha256: str
    harness_version: str
    harness_commit: str | None
    hardware: HardwareInfo
    created_at: str
    repeats: int
    """Runs promoted into this baseline (each may hold several repeats of a cell)."""
    cells: dict[str, BaselineCell]

    @property
    def samples(self) -> int:
        """The most repeats any figure of the baseline holds."""
        return max((len(v) for cell in self.cells.values() for v in cell.values.values()), default=0)


def read_baseline(path: Path) -> Baseline:
    try:
        return Baseline.model_validate_json(path.read_text())
    except FileNotFoundError as exc:
        raise GateError(f"no baseline at {path}: promote a run with `harness baseline <matrix>` and commit it"
                        ) from exc
    except ValidationError as exc:
        raise GateError(f"{path} is not a baseline of this harness ({exc.error_count()} problems); "
                        "re-promote it with `harness baseline`") from exc


def _repeat_values(summary: CellSummary | None, name: str) -> list[float | None]:
    """A figure of each repeat the cell ran (its spread's values), or its one value: each is a baseline repeat."""
    if summary is None:
        return [None]
    spread = getattr(summary, "spread", {}).get(name)
    return list(spread.values) if spread is not None else [gated_metric(name).value(summary)]


def promote(plan: Plan, store: Store, lock: Lock, previous: Baseline | None = None) -> Baseline:
    """A baseline from the stored run; with ``previous``, the run is added to it as one more repeat."""
    if previous is not None:
        differences = provenance_differences(previous, plan.matrix.name, lock)
        if differences:
            raise GateError("cannot add a repeat to a baseline of another setup: " + "; ".join(differences))
    cells = dict(previous.cells) if previous else {}  # cells this run did not reach keep their repeats
    for cell in plan.cells:
        result = store.read_result(cell)
        if result is None:
            continue
        summary = result.summary if result.status == "ok" else None
        before = previous.cells.get(cell.cell_id) if previous else None
        values = {name: [*(before.values.get(name, []) if before else []), *_repeat_values(summary, name)]
                  for name in GATEABLE}
        status: Literal["ok", "failed"] = \
            "ok" if result.status == "ok" and (before is None or before.status == "ok") else "failed"
        cells[cell.cell_id] = BaselineCell(label=cell.label, status=status, values=values)
    if not cells:
        raise GateError(f"no results under {store.dir}: run the matrix before promoting it")
    return Baseline(matrix=plan.matrix.name, matrix_sha256=lock.matrix_sha256, harness_version=lock.harness.version,
                    harness_commit=lock.harness.commit, hardware=lock.hardware, created_at=now_iso(),
                    repeats=(previous.repeats + 1) if previous else 1, cells=cells)


def write_baseline(baseline: Baseline, path: Path) -> Path:
    write_atomic(path, baseline.model_dump_json(indent=2) + "\n")
    return path


def provenance_differences(baseline: Baseline, matrix_name: str, lock: Lock) -> list[str]:
    """What differs between the baseline's run and this one (empty: same matrix, harness and machine)."""
    checks = (("matrix", baseline.matrix, matrix_name),
              ("matrix contents (sha256)", baseline.matrix_sha256[:12], lock.matrix_sha256[:12]),
              ("harness version", baseline.harness_version, lock.harness.version),
              ("machine", baseline.hardware.fingerprint, lock.hardware.fingerprint))
    return [f"{what}: baseline {old}, now {new}" for what, old, new in checks if old != new]


Status = Literal["ok", "improved", "regressed", "failed", "missing", "parity", "new", "recovered"]
FAILING: frozenset[str] = frozenset({"regressed", "failed", "missing", "parity"})


@dataclass(frozen=True, slots=True)
class GateRow:
    label: str
    metric: str
    unit: str
    direction: str
    baseline: float | None
    """Median of the baseline's repeats."""
    worst: float | None
    """The baseline repeat worst in the metric's direction: the bound is measured from it."""
    current: float | None
    change_pct: float | None
    """Current against the baseline median, percent."""
    status: Status
    note: str = ""


def _relative(value: float, reference: float) -> float:
    if reference == 0:
        return 0.0 if value == 0 else math.copysign(math.inf, value)
    return (value - reference) / abs(reference)


def _compare(label: str, gated: GatedMetric, values: Sequence[float | None], current: float | None,
             tolerance: float) -> GateRow | None:
    base = [v for v in values if v is not None]
    unit, direction = gated.metric.unit, gated.metric.direction
    if not base:
        return None  # not measured in the baseline (e.g. acceptance of an `off` cell): nothing to hold it to
    mid = float(median(base))
    if current is None:
        return GateRow(label, gated.name, unit, direction, mid, None, None, None, "regressed", "no longer measured")
    sign = 1.0 if direction == "higher" else -1.0
    worst = min(base) if direction == "higher" else max(base)
    best = max(base) if direction == "higher" else min(base)
    status: Status = "ok"
    if sign * _relative(current, worst) < -tolerance:
        status = "regressed"
    elif sign * _relative(current, best) > tolerance:
        status = "improved"
    change = _relative(current, mid) * 100.0
    return GateRow(label, gated.name, unit, direction, mid, worst, current, change, status)


@dataclass(frozen=True, slots=True)
class GateResult:
    rows: tuple[GateRow, ...]
    provenance: tuple[str, ...]
    tolerance: float
    repeats: int
    """Samples per figure in the baseline (repeats within and across promoted runs), at most."""

    @property
    def failures(self) -> tuple[GateRow, ...]:
        return tuple(r for r in self.rows if r.status in FAILING)

    @property
    def exit_code(self) -> int:
        return 1 if self.failures else 0

    @property
    def spread(self) -> GateRow | None:
        """The gated figure that moved most against the baseline median: the measured reproduction spread."""
        moved = [r for r in self.rows if r.change_pct is not None and math.isfinite(r.change_pct)]
        return max(moved, key=lambda r: abs(r.change_pct or 0.0)) if moved else None


def check(plan: Plan, store: Store, baseline: Baseline, spec: GateSpec, lock: Lock, *, strict: bool = False
          ) -> GateResult:
    """Compare the stored run of ``plan`` with ``baseline``; refuses a baseline of another matrix."""
    differences = provenance_differences(baseline, plan.matrix.name, lock)
    if baseline.matrix != plan.matrix.name or (strict and differences):
        raise GateError("baseline refused: " + "; ".join(differences))
    gated = [gated_metric(name) for name in spec.metrics]
    rows: list[GateRow] = []
    for cell in plan.cells:
        before = baseline.cells.get(cell.cell_id)
        result = store.read_result(cell)
        if before is None:
            if result is not None:
                rows.append(GateRow(cell.label, "cell", "", "", None, None, None, None, "new", "not in the baseline"))
            continue
        if before.status == "ok" and (result is None or result.status != "ok"):
            status: Status = "missing" if result is None else "failed"
            note = "not run" if result is None else (result.reason or "failed")
            rows.append(GateRow(cell.label, "cell", "", "", None, None, None, None, status, note))
            continue
        if result is None or result.summary is None:
            continue
        if before.status == "failed":
            rows.append(GateRow(cell.label, "cell", "", "", None, None, None, None, "recovered",
                                "failed in the baseline; measured now, not gated"))
            continue
        for g in gated:
            row = _compare(cell.label, g, before.values.get(g.name, []), g.value(result.summary), spec.tolerance)
            if row is not None:
                rows.append(row)
        verdict = find_cell_parity(store.parity_verdict_path(cell)) if plan.matrix.parity is not None else None
        if verdict is not None and verdict.passed is False:
            rows.append(GateRow(cell.label, "parity", "pp", "higher", None, None, verdict.delta_pp, None, "parity",
                                "parity gate failed"))
    order = {status: i for i, status in enumerate(("failed", "missing", "parity", "regressed"))}
    rows.sort(key=lambda r: order.get(r.status, len(order)))  # failures first, then plan order
    return GateResult(rows=tuple(rows), provenance=tuple(differences), tolerance=spec.tolerance,
                      repeats=baseline.samples)


def _num(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.3g}" if abs(value) < 10 else f"{value:,.1f}"


def format_table(result: GateResult) -> str:
    """The gate's verdict as a markdown table, failures first (what `harness gate` prints)."""
    lines = [f"gate: tolerance ±{result.tolerance:.0%} from the worst of up to {result.repeats} baseline repeat(s)"]
    lines += [f"  flagged: {difference}" for difference in result.provenance]
    lines += ["", "| status | cell | metric | baseline | now | Δ vs baseline | note |", "|---|---|---|--:|--:|--:|---|"]
    for r in result.rows:
        change = f"{r.change_pct:+.1f}%" if r.change_pct is not None and math.isfinite(r.change_pct) else "–"
        metric = f"{r.metric} ({r.unit}, {r.direction} is better)" if r.unit else r.metric
        lines.append(f"| {r.status} | {r.label} | {metric} | {_num(r.baseline)} | {_num(r.current)} | {change} "
                     f"| {r.note} |")
    failures = len(result.failures)
    lines += ["", f"verdict: {'FAIL' if failures else 'PASS'} ({failures} failing of {len(result.rows)} checks)"]
    return "\n".join(lines)
