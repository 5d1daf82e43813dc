"""The regression gate: this run's launches against the baseline's, metric by metric, with the confidence of each.

Every (cell, metric) gets one of three verdicts, each with the interval it was decided on:

* ``ok``: within the tolerance with 95% confidence (``improved`` when better than it with 95% confidence);
* ``regressed``: worse than the tolerance with 95% confidence;

(each a one-sided 95% bound, so the interval shown is the two-sided 90% one whose bounds those are);
* ``inconclusive``: the launch-to-launch noise is wider than the tolerance, so neither can be said.

Timing figures (``Metric.judged == "timing"``) are compared as the ratio of geometric means of the launches with
Student's t interval (``harness.metrics.intervals``). The machine-speed probes of both runs (``harness.calibration``)
give this run's speed relative to the baseline's. By default (``gates.machine_speed: guard``) a timing regression
that a machine as slow as the probes allow (their one-sided 95% bound) could explain, or a pass while the machine
ran faster than the tolerance beyond the probes' noise, is inconclusive rather than attributed to the recipe: on
this kind of machine the engine slows far more than in proportion to the probe (README: a neighbour on one core
cut tok/s to 0.22-0.32x), so scaling by the probe would under-correct.
``adjust`` scales this run's timings by the speed ratio first, for machines where the proportion was shown. The
run's median probe is used, not each launch's: the launch-to-launch noise does not follow the probe.
Figures that do not depend on the machine's speed (acceptance under greedy decoding on fixed prompts) get the same
interval without the correction; error counts are exact: any increase regresses. A cell that passed in the baseline
and failed (or was not run) now is a regression; so is a failed parity verdict.

On a machine the baseline file holds no entry for (``harness.verdict.baseline``: one per machine), another
machine's entry still judges the exact checks and the cells that now fail; every timing and sampled figure is
``inconclusive`` ("measured on another machine"), never a pass or a regression: a baseline of an AMD EPYC says
nothing about an Intel Xeon's TPOT, and a fixture trained on another CPU may decode differently.

Exit codes: 0 every check ok, 1 something regressed or failed, 3 nothing regressed but some check is
inconclusive, 2 the gate could not compare (``GateError``: no baseline, one of another matrix, one with fewer than
three launches of some configuration, or with ``--strict`` one of another machine or harness version).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harness.config.gates import GateSpec
from harness.errors import ConfigError
from harness.metrics.cell_summary import CellSummary
from harness.metrics.gateable import gated_metric, launch_summaries
from harness.parity.cell_parity import find_cell_parity
from harness.plan.cells import Plan
from harness.result_records import CellResult
from harness.store import Store
from harness.verdict.baseline import Baseline, BaselineCell, BaselineFile, choose, refuse
from harness.verdict.gate_row import FAILING, GateRow, MachineSpeed, RowRule, Status, compare_row
from harness.verdict.lock import Lock

EXIT_INCONCLUSIVE = 3


def check_gate_metrics(spec: GateSpec, source: str) -> None:
    """Every name in ``gates.metrics`` is a gateable metric, or a ConfigError names it (before anything runs)."""
    for index, name in enumerate(spec.metrics):
        try:
            gated_metric(name)
        except ValueError as exc:
            raise ConfigError(source, f"gates.metrics[{index}]", str(exc),
                              "use one of the gateable metrics listed, or remove it") from None


@dataclass(frozen=True, slots=True)
class GateResult:
    rows: tuple[GateRow, ...]
    provenance: tuple[str, ...]
    tolerance: float
    launches: int
    """Launches per configuration in the baseline (the fewest)."""
    speed: MachineSpeed | None = None
    """This run's machine speed relative to the baseline's, from the probes."""
    elsewhere: str | None = None
    """The machine the baseline was measured on when the file holds none for this one (only exact checks judged)."""
    machine_speed: str = "guard"
    """How the speed ratio entered the timing verdicts (``GateSpec.machine_speed``; ``paired`` for a compare)."""
    baseline_commit: str | None = None
    """The commit whose harness made the baseline: what ``harness regress --against`` re-measures beside this code."""

    @property
    def failures(self) -> tuple[GateRow, ...]:
        return tuple(r for r in self.rows if r.status in FAILING)

    @property
    def inconclusive(self) -> tuple[GateRow, ...]:
        return tuple(r for r in self.rows if r.status == "inconclusive")

    @property
    def conclusive_share(self) -> float | None:
        judged = [r for r in self.rows if r.status in ("ok", "improved", "regressed", "inconclusive")]
        return sum(r.status != "inconclusive" for r in judged) / len(judged) if judged else None

    @property
    def verdict(self) -> str:
        return "FAIL" if self.failures else "INCONCLUSIVE" if self.inconclusive else "PASS"

    @property
    def exit_code(self) -> int:
        return 1 if self.failures else EXIT_INCONCLUSIVE if self.inconclusive else 0


def _machine_seconds(baseline: Baseline) -> list[float]:
    """The probe seconds around each launch of the baseline (the cells of one launch share them: the longest list)."""
    lists = [[m for m in c.machine_s if m is not None] for c in baseline.cells.values()]
    return max(lists, key=len, default=[])


def _cell_rows(label: str, before: BaselineCell, result: CellResult, rule: RowRule) -> list[GateRow]:
    assert result.summary is not None
    least, shortest = rule.spec.min_load_s, _shortest_load_s(result.summary)
    if least is not None and shortest is not None and shortest < least:
        rule = replace(rule, too_short=f"its load lasted {shortest:.1f} s in a launch, under gates.min_load_s "
                                       f"{least:g} s: too short to judge its timings")
    rows = []
    for name in rule.spec.metrics:
        gated = gated_metric(name)
        row = compare_row(label, gated, before, gated.launch_values(result.summary), rule)
        if row is not None:
            rows.append(row)
    return rows


def _shortest_load_s(summary: CellSummary) -> float | None:
    """The shortest measured load of the launches the summary pools."""
    seconds = [launch.duration_s for launch in launch_summaries(summary) if launch.duration_s]
    return min(seconds) if seconds else None


def ordered(rows: Sequence[GateRow]) -> tuple[GateRow, ...]:
    """Failures first, then doubts, then plan order (a stable sort)."""
    order = {status: i for i, status in enumerate(("failed", "missing", "parity", "regressed", "inconclusive"))}
    return tuple(sorted(rows, key=lambda r: order.get(r.status, len(order))))


def _lookup(baseline: Baseline, cell_id: str, label: str) -> tuple[BaselineCell | None, str]:
    """The cell's baseline by id, else by label (the recipe's settings changed, the cell is the same)."""
    if cell_id in baseline.cells:
        return baseline.cells[cell_id], ""
    by_label = [c for c in baseline.cells.values() if c.label == label]
    return (by_label[0], "matched by label: server settings differ") if len(by_label) == 1 else (None, "")


@dataclass(frozen=True, slots=True)
class Against:
    """What a run is judged against: the baselines file (one entry per machine), where it was read from (named in
    every refusal), and whether an entry of another machine or harness version is refused outright (``--strict``)."""

    baselines: BaselineFile
    source: Path | str = "the baseline"
    strict: bool = False


def check(plan: Plan, store: Store, against: Against, spec: GateSpec, lock: Lock, *,
          now_machine_s: Sequence[float] = ()) -> GateResult:
    """Judge the stored run of ``plan`` against this machine's entry of the baselines (another machine's for the exact
    checks only); GateError when the baseline cannot judge it.
    ``now_machine_s``: the probe seconds around each launch of this run (none: no probe ran)."""
    source, strict = against.source or "the baseline", against.strict
    baseline, foreign = choose(against.baselines, source, plan, lock, strict)
    differences = refuse(baseline, source, plan, lock, strict)
    elsewhere = baseline.hardware.fingerprint if foreign else None
    speed = None if foreign else MachineSpeed.between(_machine_seconds(baseline), now_machine_s)
    rows: list[GateRow] = []
    for cell in plan.cells:
        before, matched = _lookup(baseline, cell.cell_id, cell.label)
        result = store.read_result(cell)
        if before is None:
            if result is not None:
                rows.append(GateRow(cell.label, "cell", "", "", None, None, "new", note="not in the baseline"))
            continue
        if before.status == "ok" and (result is None or result.status != "ok"):
            status: Status = "missing" if result is None else "failed"
            note = "not run" if result is None else (result.reason or "failed")
            rows.append(GateRow(cell.label, "cell", "", "", None, None, status, note=note))
            continue
        if result is None or result.summary is None:
            continue
        if before.status == "failed":
            rows.append(GateRow(cell.label, "cell", "", "", None, None, "recovered",
                                note="failed in the baseline; measured now, not gated"))
            continue
        found = _cell_rows(cell.label, before, result, RowRule(spec, speed, elsewhere))
        rows += [r if not matched else replace(r, note=f"{r.note}; {matched}".strip("; ")) for r in found]
        verdict = find_cell_parity(store.parity_verdict_path(cell)) if plan.matrix.parity is not None else None
        if verdict is not None and verdict.passed is False:
            rows.append(GateRow(cell.label, "parity", "pp", "higher", None, verdict.delta_pp, "parity",
                                note="parity gate failed"))
    return GateResult(rows=ordered(rows), provenance=tuple(differences), tolerance=spec.tolerance,
                      launches=baseline.launches, speed=speed, elsewhere=elsewhere, machine_speed=spec.machine_speed,
                      baseline_commit=baseline.harness_commit)
