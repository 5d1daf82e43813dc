"""Cost levers as measured: how $/MTok moves when one axis of a recipe changes, beside what the capstone lecture claims.

A lever is a change on one axis (precision, speculation, concurrency step, parallelism/EP, runtime, topology)
between two measured cells that agree on everything else (model, workload, the other axes). Its effect is the
relative change in output $/MTok; one matrix has one price per device, so that is ``(tok/s per device)_before /
(tok/s per device)_after - 1`` (a deployment holds every server's devices), and it needs no price to be exact.
The capstone lecture's claimed ranges (§5.3; docs/sources.md) are inputs, printed as such.

Each pair also carries the interval of its $/MTok ratio over the two cells' launches (``harness.analysis.noise``).
A lever's reading combines its pairs conservatively: its interval is the envelope of the pairs' intervals (the
effect may differ from pair to pair, at each concurrency say, so they are not averaged into one), and it is
cheaper or dearer only when every pair with an interval says so outside the launch noise. Against the lecture's
range, the lever agrees only when that envelope lies inside the range and disagrees only when it lies wholly
outside; otherwise it is inconclusive. With one launch per cell there is no interval: the median is a point
reading and the verdict says it is not a finding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Literal

from harness.analysis.cost import PricedCell
from harness.analysis.noise import ONE_LAUNCH_EACH, TIE, Call, Margin, cost_margin, launch_throughputs
from harness.config.axes import AXIS_NAMES
from harness.config.matrix import Matrix
from harness.plan.cells import Cell

LEVER_AXES = ("precision", "speculation", "concurrency", "parallel", "runtime", "topology")
LeverCall = Literal["cheaper", "dearer", "tie", "mixed", "unknown"]
# a pair's margin is $/MTok after / before: side B (after) larger is dearer
_LEVER_CALL: dict[Call, LeverCall] = {"a": "cheaper", "b": "dearer", "tie": "tie", "unknown": "unknown"}


@dataclass(frozen=True, slots=True)
class LectureClaim:
    """One row of the capstone lecture's 'what moves the cost model' table (a published claim, not a measurement)."""

    text: str
    axis: str
    before: str
    after: str
    lo_pct: float
    hi_pct: float


LECTURE_CLAIMS: tuple[LectureClaim, ...] = (
    LectureClaim("FP4 vs FP8", "precision", "fp8", "fp4", -40.0, -30.0),
    LectureClaim("MTP / EAGLE", "speculation", "off", "mtp", -55.0, -40.0),
    LectureClaim("MTP / EAGLE", "speculation", "off", "eagle3", -55.0, -40.0),
    LectureClaim("Concurrency 16 -> 64", "concurrency", "16", "64", -65.0, -50.0),
    LectureClaim("Concurrency 64 -> 256", "concurrency", "64", "256", -20.0, -10.0),
    LectureClaim("EP=8 -> EP=16", "parallel", "ep8", "ep16", -20.0, -10.0),
    LectureClaim("Disaggregation (NVL72 in-domain)", "topology", "colocated", "pd", -35.0, -20.0),
)
UNMEASURED_CLAIMS: tuple[str, ...] = ()


def _label(cell: Cell, axis: str) -> str:
    value = cell.axis_value(axis)
    return str(getattr(value, "label", value))


# How a claim names an axis value: weights precision, speculation method, EP size, concurrency, runtime.
CLAIM_KEY: dict[str, Callable[[Cell], str]] = {
    "precision": lambda c: c.server.precision.weights,
    "speculation": lambda c: c.server.speculation.method,
    "parallel": lambda c: f"ep{c.server.parallel.ep}",
    "concurrency": lambda c: str(c.concurrency),
    "runtime": lambda c: c.server.runtime,
    "topology": lambda c: c.server.topology.kind,
}


@dataclass(frozen=True, slots=True)
class Lever:
    """One measured change on one axis, over every pair of cells that shows it."""

    axis: str
    before: str
    after: str
    changes_pct: tuple[float, ...]
    """Change in output $/MTok per pair, percent (negative: cheaper)."""
    claim: LectureClaim | None
    margins: tuple[Margin, ...] = ()
    """Per pair (as ``changes_pct``), $/MTok after over before with its interval over the cells' launches."""

    @property
    def median_pct(self) -> float:
        return float(median(self.changes_pct))

    @property
    def lo_pct(self) -> float:
        return min(self.changes_pct)

    @property
    def hi_pct(self) -> float:
        return max(self.changes_pct)

    @property
    def interval_pct(self) -> tuple[float, float] | None:
        """The envelope of the pairs' 95% intervals as a change in $/MTok, percent; None when no pair has one."""
        intervals = [m.interval for m in self.margins if m.interval is not None]
        if not intervals:
            return None
        return (min(i.low for i in intervals) - 1.0) * 100.0, (max(i.high for i in intervals) - 1.0) * 100.0

    @property
    def call(self) -> LeverCall:
        """Whether the lever moves the cost at all, given the launch noise: ``cheaper`` or ``dearer`` when every pair
        with an interval says so outside the noise, ``tie`` when every one is a tie, ``mixed`` when they differ,
        ``unknown`` when no pair has an interval (one launch per cell)."""
        calls = {m.call for m in self.margins if m.interval is not None}
        if not calls:
            return "unknown"
        if len(calls) > 1:
            return "mixed"
        return _LEVER_CALL[calls.pop()]

    @property
    def reading(self) -> str:
        """``call`` as the report prints it, with how many pairs it rests on when not all have an interval."""
        text = {"cheaper": "cheaper, outside the launch noise", "dearer": "dearer, outside the launch noise",
                "tie": TIE, "mixed": "inconclusive: the pairs disagree", "unknown": ONE_LAUNCH_EACH}[self.call]
        judged = sum(m.interval is not None for m in self.margins)
        return text if judged in (0, len(self.changes_pct)) else f"{text} ({judged} of {len(self.changes_pct)} pairs)"

    @property
    def point_verdict(self) -> str:
        """The median against the lecture's range, ignoring the noise."""
        claim = self.claim
        if claim is None:
            return "no claim in the lecture"
        if claim.lo_pct <= self.median_pct <= claim.hi_pct:
            return "agrees"
        return _against(claim, self.median_pct, self.median_pct) or "agrees"

    @property
    def verdict(self) -> str:
        """The lever against the lecture's range, judged on its launch interval (see the module's docstring)."""
        claim, bounds = self.claim, self.interval_pct
        if claim is None:
            return "no claim in the lecture"
        if bounds is None:
            return f"{ONE_LAUNCH_EACH}, not a finding (the median alone: {self.point_verdict})"
        low, high = bounds
        if claim.lo_pct <= low and high <= claim.hi_pct:
            return "agrees"
        return _against(claim, low, high) or "inconclusive: the launch interval reaches outside the claimed range"


def _against(claim: LectureClaim, low: float, high: float) -> str | None:
    """How a change known to lie in [low, high] percent disagrees with the claim; None unless wholly outside it."""
    if low > 0:
        return "disagrees: it made tokens dearer here"
    if low > claim.hi_pct:
        return "disagrees: a smaller saving here"
    if high < claim.lo_pct:
        return "disagrees: a larger saving here"
    return None


def _steps(matrix: Matrix, axis: str) -> list[tuple[str, str]]:
    """The (before, after) changes a lever is measured for: consecutive concurrency steps; on other axes the
    first value listed against each other value."""
    if axis == "concurrency":
        values = [str(c) for c in sorted(matrix.concurrencies())]
        return list(zip(values, values[1:], strict=False))
    raw = getattr(matrix.axes, axis)
    values = [v if isinstance(v, str) else v.label for v in raw]
    return [(values[0], v) for v in values[1:]]


def _identity(cell: Cell, axis: str) -> tuple[str, ...]:
    """Every other axis of the matrix, which two cells must share to isolate ``axis``."""
    return tuple(_label(cell, a) for a in AXIS_NAMES if a != axis)


def _claim(axis: str, before: Cell, after: Cell) -> LectureClaim | None:
    key = CLAIM_KEY[axis]
    return next((c for c in LECTURE_CLAIMS if c.axis == axis and c.before == key(before) and c.after == key(after)),
                None)


def measure_levers(rows: Sequence[PricedCell], matrix: Matrix) -> list[Lever]:
    """Every lever the matrix's measured cells show, in axis order."""
    measured = [r for r in rows if r.cost is not None and r.cost.output_tok_s > 0]
    levers = []
    for axis in LEVER_AXES:
        for before, after in _steps(matrix, axis):
            changes: list[float] = []
            margins: list[Margin] = []
            claim: LectureClaim | None = None
            for a in (r for r in measured if _label(r.cell, axis) == before):
                for b in (r for r in measured if _label(r.cell, axis) == after):
                    if _identity(a.cell, axis) == _identity(b.cell, axis):
                        assert a.summary is not None and b.summary is not None and a.cost and b.cost
                        changes.append((a.cost.tok_s_per_device / b.cost.tok_s_per_device - 1.0) * 100.0)
                        # per device: a deployment's tokens are paid for by all of its servers' devices
                        margins.append(cost_margin([v / a.cost.price.devices for v in launch_throughputs(a.summary)],
                                                   [v / b.cost.price.devices for v in launch_throughputs(b.summary)]))
                        claim = claim or _claim(axis, a.cell, b.cell)
            if changes:
                levers.append(Lever(axis, before, after, tuple(changes), claim, tuple(margins)))
    return levers
