"""One gated figure of one cell against the baseline's launches: the row the gate prints, with its verdict, its
interval and what the machine's speed did to it (``harness.verdict.gate`` assembles the rows of a run)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median
from typing import Literal

from harness.config.gates import GateSpec
from harness.metrics.gateable import GatedMetric
from harness.metrics.intervals import GATE_CONFIDENCE, RatioInterval, detectable_change, judge, ratio_interval
from harness.verdict.baseline import BaselineCell

Status = Literal["ok", "improved", "regressed", "inconclusive", "failed", "missing", "parity", "new", "recovered"]
FAILING: frozenset[str] = frozenset({"regressed", "failed", "missing", "parity"})


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
    detectable: float | None = None
    """The smallest change in the worse direction this comparison would read ``regressed`` 4 times in 5 at its
    noise and launches (``harness.metrics.intervals.detectable_change``); what an inconclusive figure could see."""

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


@dataclass(frozen=True, slots=True)
class RowRule:
    """How every row of a run is judged: the matrix's gate settings, this run's machine speed relative to the
    baseline's from the probes (None: not probed), and the machine the baseline was measured on when not this one
    (``elsewhere``: then only exact figures are judged)."""

    spec: GateSpec
    speed: MachineSpeed | None = None
    elsewhere: str | None = None
    too_short: str | None = None
    """Why this cell's timings are not judged (its load was shorter than ``gates.min_load_s``); None: judged."""


def compare_row(label: str, gated: GatedMetric, before: BaselineCell, now_values: Sequence[float | None],
                rule: RowRule) -> GateRow | None:
    """One gated figure of one cell; None when the baseline never measured it (acceptance of an ``off`` cell)."""
    spec, speed, elsewhere = rule.spec, rule.speed, rule.elsewhere
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
    unjudged = f"baseline measured on another machine ({elsewhere})" if elsewhere is not None else \
        rule.too_short if gated.metric.judged == "timing" else None
    if unjudged is not None:
        shown = ratio_interval(base, now, GATE_CONFIDENCE) if min(base + now) > 0 else None
        ratio, low, high, noise = (shown.ratio, shown.low, shown.high, shown.noise) if shown else (None,) * 4
        return GateRow(label, gated.name, unit, direction, median(base), median(now), "inconclusive", ratio, low,
                       high, noise, counts, f"{unjudged}: shown, not judged")
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
                   interval.high, interval.noise, counts, note,
                   detectable=detectable_change(interval, direction, spec.tolerance))
