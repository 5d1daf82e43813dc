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
from statistics import median
from typing import Literal

from harness.config.matrix import GateSpec
from harness.errors import ConfigError
from harness.metrics.gateable import GatedMetric, gated_metric
from harness.metrics.intervals import GATE_CONFIDENCE, RatioInterval, judge, ratio_interval
from harness.parity.cell_parity import find_cell_parity
from harness.plan.cells import Plan
from harness.store import CellResult, Store
from harness.verdict.baseline import Baseline, BaselineCell, BaselineFile, choose, refuse
from harness.verdict.lock import Lock

Status = Literal["ok", "improved", "regressed", "inconclusive", "failed", "missing", "parity", "new", "recovered"]
FAILING: frozenset[str] = frozenset({"regressed", "failed", "missing", "parity"})
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
class GateRow:
    label: str
    metric: str
    unit: str
    direction: str
    baseline: float | None
    """Median of the baseline's launches (as measured, before any speed correction)."""
    current: float | None
    """Median of this run's launches (as measured)."""
    status: Status
    ratio: float | None = None
    """Now / baseline, ratio of geometric means (speed-corrected where the row says so)."""
    low: float | None = None
    high: float | None = None
    """The interval of ``ratio`` the verdict was decided on: two-sided 90%, so each bound is a one-sided 95% bound
    (none for exact figures)."""
    noise: float | None = None
    """Launch-to-launch noise of the figure, as a fraction (pooled over both sides)."""
    launches: tuple[int, int] = (0, 0)
    """Launches on each side: baseline, now."""
    note: str = ""
    history: str = ""
    """The results history's verdict on this figure (``harness.verdict.history_rule``), empty when none was read."""

    @property
    def change_pct(self) -> float | None:
        return (self.ratio - 1.0) * 100.0 if self.ratio is not None else None


def _exact(label: str, gated: GatedMetric, base: list[float], now: list[float], counts: tuple[int, int]) -> GateRow:
    worst_base, worst_now = max(base), max(now)
    status: Status = "regressed" if worst_now > worst_base else "ok"
    note = "exact: any increase regresses" + (f" ({worst_base:g} → {worst_now:g})" if status == "regressed" else "")
    return GateRow(label, gated.name, gated.metric.unit, gated.metric.direction, median(base), median(now), status,
                   launches=counts, note=note)


def _at_baseline_speed(values: list[float], speed: float, gated: GatedMetric) -> list[float]:
    """This run's figures as the baseline's machine would have measured them: rates divided by the speed ratio,
    latencies multiplied by it (``speed`` 0.7: this run's machine did the probe's work at 0.7x the speed)."""
    return [v * speed if gated.metric.unit == "ms" else v / speed for v in values]


@dataclass(frozen=True, slots=True)
class MachineSpeed:
    """This run's machine speed relative to the baseline's (0.71: it ran at 0.71x), from the probes of both runs,
    with the interval the probes' own noise allows (None: too few probes for one)."""

    ratio: float
    low: float | None = None
    high: float | None = None

    @classmethod
    def between(cls, baseline_s: Sequence[float], now_s: Sequence[float]) -> MachineSpeed | None:
        """From the probe seconds around each launch of both runs (speed is the inverse of seconds)."""
        if not baseline_s or not now_s:
            return None
        interval = ratio_interval(now_s, baseline_s, GATE_CONFIDENCE)  # baseline seconds / now seconds = speed
        if interval is None:
            return cls(float(median(baseline_s)) / float(median(now_s)))
        return cls(interval.ratio, interval.low, interval.high)

    def beyond(self, tolerance: float) -> Literal["slower", "faster"] | None:
        """Whether the machine ran slower (faster) than the tolerance with 95% confidence."""
        if self.high is not None and self.high < 1 - tolerance:
            return "slower"
        if self.low is not None and self.low > 1 + tolerance:
            return "faster"
        return None


def _guarded(status: Status, interval: RatioInterval, direction: str, speed: MachineSpeed,
             spec: GateSpec) -> tuple[Status, str]:
    """A timing verdict the machine's own speed could explain is not attributed to the recipe.

    A regression stands only if it is larger than the slowest the probes allow this run's engine to have been:
    the probes' one-sided 95% bound on the machine's speed, raised to ``spec.speed_exponent`` (the engine slows
    more than the probe). The change's bound nearest to no change, with throughput divided by that speed (a latency
    multiplied by it), must still be beyond the tolerance. A regression is what fails CI, so a slowdown the machine
    may explain demotes it even when the probes cannot prove the machine slower. A pass is demoted only on a
    machine that ran faster than the tolerance beyond the probes' noise."""
    tolerance = spec.tolerance
    if status == "regressed":
        slowest = min(speed.ratio, speed.low if speed.low is not None else speed.ratio)
        engine = slowest ** spec.speed_exponent
        if slowest < 1:
            own = interval.high / engine if direction == "higher" else interval.low * engine
            if (own >= 1 - tolerance) if direction == "higher" else (own <= 1 + tolerance):
                return "inconclusive", (f"the machine may have run as slow as {slowest:.2f}x of the baseline's "
                                        f"speed (the engine then at {engine:.2f}x), which could explain this "
                                        "change: not attributable")
    elif status in ("ok", "improved") and speed.beyond(tolerance) == "faster":
        return "inconclusive", f"the machine ran at {speed.ratio:.2f}x of the baseline's speed: not attributable"
    return status, ""


def compare_row(label: str, gated: GatedMetric, before: BaselineCell, now_values: Sequence[float | None],
                spec: GateSpec, speed: MachineSpeed | None = None, elsewhere: str | None = None) -> GateRow | None:
    """One gated figure of one cell; None when the baseline never measured it (acceptance of an ``off`` cell).
    ``speed`` is this run's machine speed relative to the baseline's, from the probes (None: not probed).
    ``elsewhere``: the machine the baseline was measured on, when not this one (only exact figures are judged)."""
    base_raw = before.values.get(gated.name, [])
    base = [v for v in base_raw if v is not None]
    now = [v for v in now_values if v is not None]
    unit, direction = gated.metric.unit, gated.metric.direction
    if not base:
        return None
    counts = (len(base), len(now))
    if not now:
        return GateRow(label, gated.name, unit, direction, median(base), None, "regressed", launches=counts,
                       note="no longer measured")
    if gated.metric.judged == "exact":
        return _exact(label, gated, base, now, counts)
    if elsewhere is not None:
        shown = ratio_interval(base, now, GATE_CONFIDENCE) if min(base + now) > 0 else None
        ratio, low, high, noise = (shown.ratio, shown.low, shown.high, shown.noise) if shown else (None,) * 4
        return GateRow(label, gated.name, unit, direction, median(base), median(now), "inconclusive", ratio, low,
                       high, noise, counts, f"baseline measured on another machine ({elsewhere}): shown, not judged")
    if min(base + now) <= 0:
        return _exact(label, gated, base, now, counts)
    note = ""
    timing = gated.metric.judged == "timing" and speed is not None
    if timing and spec.machine_speed == "adjust":
        assert speed is not None
        now = _at_baseline_speed(now, speed.ratio ** spec.speed_exponent, gated)
        note = f"at the baseline's machine speed (this run {speed.ratio:.2f}x, the engine at that to the power " \
               f"{spec.speed_exponent:g})"
    interval = ratio_interval(base, now, GATE_CONFIDENCE)
    if interval is None:
        return GateRow(label, gated.name, unit, direction, median(base), median(now), "inconclusive",
                       launches=counts, note="too few launches to estimate the noise")
    assert direction in ("higher", "lower")
    status: Status = judge(interval, direction, spec.tolerance)
    if timing and spec.machine_speed == "guard" and speed is not None:
        status, note = _guarded(status, interval, direction, speed, spec)
    return GateRow(label, gated.name, unit, direction, float(median(b for b in base_raw if b is not None)),
                   float(median(v for v in now_values if v is not None)), status, interval.ratio, interval.low,
                   interval.high, interval.noise, counts, note)


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


def _cell_rows(label: str, before: BaselineCell, result: CellResult, spec: GateSpec, speed: MachineSpeed | None,
               elsewhere: str | None) -> list[GateRow]:
    assert result.summary is not None
    rows = []
    for name in spec.metrics:
        gated = gated_metric(name)
        row = compare_row(label, gated, before, gated.launch_values(result.summary), spec, speed, elsewhere)
        if row is not None:
            rows.append(row)
    return rows


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


def check(plan: Plan, store: Store, baselines: BaselineFile, spec: GateSpec, lock: Lock, *, source: Path | str = "",
          strict: bool = False, now_machine_s: Sequence[float] = ()) -> GateResult:
    """Judge the stored run of ``plan`` against this machine's entry of ``baselines`` (another machine's for the exact
    checks only); GateError when the baseline cannot judge it.
    ``now_machine_s``: the probe seconds around each launch of this run (none: no probe ran)."""
    baseline, foreign = choose(baselines, source or "the baseline", plan, lock, strict)
    differences = refuse(baseline, source or "the baseline", plan, lock, strict)
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
        found = _cell_rows(cell.label, before, result, spec, speed, elsewhere)
        rows += [r if not matched else replace(r, note=f"{r.note}; {matched}".strip("; ")) for r in found]
        verdict = find_cell_parity(store.parity_verdict_path(cell)) if plan.matrix.parity is not None else None
        if verdict is not None and verdict.passed is False:
            rows.append(GateRow(cell.label, "parity", "pp", "higher", None, verdict.delta_pp, "parity",
                                note="parity gate failed"))
    return GateResult(rows=ordered(rows), provenance=tuple(differences), tolerance=spec.tolerance,
                      launches=baseline.launches, speed=speed, elsewhere=elsewhere, machine_speed=spec.machine_speed)
