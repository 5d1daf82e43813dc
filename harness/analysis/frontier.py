"""Throughput-interactivity frontiers: per (runtime, precision, speculation) series, which cells are not beaten.

A series is one recipe swept over concurrency (and anything else the matrix varies) for one model and workload
(a "panel"). Each measured cell is a point: interactivity (tok/s/user = 1000 / median TPOT) against output
tok/s per device. The Pareto frontier keeps the points no other point of the series beats on both. Recipes are
compared at matched interactivity, interpolated linearly along the frontiers and never extrapolated past their
measured ends, in the form the InferenceX pages use. Cost at an interpolated point follows from its throughput
(the replica's price is an input), so no figure here is invented. Plots are drawn with matplotlib's Agg backend.

Every point keeps its throughput per server launch, so a comparison at matched interactivity carries the interval
of its $/MTok ratio over the launches (``harness.analysis.noise``). An interpolated point interpolates launch by
launch (the cells of one recipe share their launches, one server per configuration and round); when its two cells
ran on different numbers of launches it takes the nearer cell's launches, scaled to the point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.analysis.cost import SECONDS_PER_HOUR, TOKENS_PER_MTOK, PricedCell
from harness.analysis.noise import Margin, cost_margin, launch_throughputs, margin
from harness.config.matrix import Matrix

SERIES_AXES = ("runtime", "precision", "speculation")


@dataclass(frozen=True, slots=True)
class FrontierPoint:
    """One measured cell on the interactivity / throughput plane."""

    label: str
    concurrency: int
    interactivity: float
    tok_s_per_device: float
    usd_per_device_hour: float | None
    watts_per_device: float | None
    launch_tok_s: tuple[float, ...] = ()
    """Output tok/s per device on each server launch of the cell (one value with one launch)."""


@dataclass(frozen=True, slots=True)
class Series:
    """One recipe (runtime, precision, speculation, and its deployment when it is not colocated) of one panel
    (model, workload), all its measured points."""

    model: str
    workload: str
    runtime: str
    precision: str
    speculation: str
    points: tuple[FrontierPoint, ...]
    frontier: tuple[FrontierPoint, ...]
    """Pareto-optimal points in ascending interactivity."""
    topology: str = "colocated"
    """A deployment (replicas, prefill/decode) is a recipe of its own, priced by all of its servers."""

    @property
    def name(self) -> str:
        deployed = "" if self.topology == "colocated" else f"/{self.topology}"
        return f"{self.runtime}/{self.precision}/{self.speculation}{deployed}"

    @property
    def panel(self) -> tuple[str, str]:
        return self.model, self.workload

    def axis(self, name: str) -> str:
        return str(getattr(self, name))


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """A point on a frontier at a chosen interactivity: measured when it is a cell, else interpolated."""

    interactivity: float
    tok_s_per_device: float
    usd_per_mtok: float | None
    tok_s_per_mw: float | None
    concurrency: tuple[int, int]
    """The concurrencies of the two measured cells it lies between (equal when measured)."""
    launch_tok_s: tuple[float, ...] = ()
    """The point's tok/s per device on each launch (see the module's docstring)."""

    @property
    def measured(self) -> bool:
        return self.concurrency[0] == self.concurrency[1]


def pareto(points: Sequence[FrontierPoint]) -> tuple[FrontierPoint, ...]:
    """Points not beaten on both interactivity and tok/s per device, in ascending interactivity."""
    best = -1.0
    kept = []
    for point in sorted(points, key=lambda p: (-p.interactivity, -p.tok_s_per_device)):
        if point.tok_s_per_device > best:
            kept.append(point)
            best = point.tok_s_per_device
    return tuple(reversed(kept))


def build_series(rows: Sequence[PricedCell]) -> list[Series]:
    """Group measured cells into series; cells without an interactivity (no TPOT) cannot be placed."""
    groups: dict[tuple[str, str, str, str, str, str], list[FrontierPoint]] = {}
    for row in rows:
        summary, cost = row.summary, row.cost
        if summary is None or cost is None or not summary.interactivity:
            continue
        server = row.cell.server
        key = (server.model_name, row.cell.workload_name, server.runtime, server.precision.label,
               server.speculation.label, server.topology.label)
        groups.setdefault(key, []).append(FrontierPoint(
            label=row.cell.label, concurrency=row.cell.concurrency, interactivity=summary.interactivity,
            tok_s_per_device=cost.tok_s_per_device, usd_per_device_hour=cost.price.usd_per_device_hour,
            watts_per_device=cost.watts_per_device,
            launch_tok_s=tuple(v / cost.price.devices for v in launch_throughputs(summary))))
    return [Series(model, workload, runtime, precision, speculation, tuple(points), pareto(points), topology)
            for (model, workload, runtime, precision, speculation, topology), points in groups.items()]


def _launches_at(a: FrontierPoint, b: FrontierPoint, t: float, tok_s: float) -> tuple[float, ...]:
    if len(a.launch_tok_s) == len(b.launch_tok_s):
        return tuple(va + t * (vb - va) for va, vb in zip(a.launch_tok_s, b.launch_tok_s, strict=True))
    near = a if t < 0.5 else b
    scale = tok_s / near.tok_s_per_device if near.tok_s_per_device else 0.0
    return tuple(v * scale for v in near.launch_tok_s)


def _operating_point(a: FrontierPoint, b: FrontierPoint, x: float) -> OperatingPoint:
    t = 0.0 if b.interactivity == a.interactivity else (x - a.interactivity) / (b.interactivity - a.interactivity)
    tok_s = a.tok_s_per_device + t * (b.tok_s_per_device - a.tok_s_per_device)
    usd = a.usd_per_device_hour  # one price per matrix: the replica's hardware does not change along a series
    watts = (a.watts_per_device + t * (b.watts_per_device - a.watts_per_device)
             if a.watts_per_device is not None and b.watts_per_device is not None else None)
    return OperatingPoint(
        interactivity=x, tok_s_per_device=tok_s,
        usd_per_mtok=usd * TOKENS_PER_MTOK / (SECONDS_PER_HOUR * tok_s) if usd is not None and tok_s > 0 else None,
        tok_s_per_mw=tok_s / watts * 1e6 if watts else None,
        concurrency=(a.concurrency, a.concurrency) if t == 0.0 else
        (b.concurrency, b.concurrency) if t == 1.0 else (a.concurrency, b.concurrency),
        launch_tok_s=_launches_at(a, b, t, tok_s))


def at_interactivity(series: Series, x: float) -> OperatingPoint | None:
    """The frontier's throughput and cost at interactivity ``x``; None outside its measured range."""
    frontier = series.frontier
    if not frontier or not frontier[0].interactivity <= x <= frontier[-1].interactivity:
        return None
    for a, b in list(zip(frontier, frontier[1:], strict=False)) or [(frontier[0], frontier[0])]:
        if a.interactivity <= x <= b.interactivity:
            return _operating_point(a, b, x)
    return None


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two recipes that differ on one axis, compared at one matched interactivity."""

    panel: tuple[str, str]
    axis: str
    challenger: Series
    baseline: Series
    interactivity: float | None
    challenger_point: OperatingPoint | None
    baseline_point: OperatingPoint | None

    @property
    def cheaper_pct(self) -> float | None:
        """How much cheaper per token the challenger is than the baseline (negative: dearer)."""
        c, b = self.challenger_point, self.baseline_point
        if c is None or b is None or c.usd_per_mtok is None or not b.usd_per_mtok:
            return None
        return (b.usd_per_mtok - c.usd_per_mtok) / b.usd_per_mtok * 100.0

    @property
    def more_throughput_pct(self) -> float | None:
        c, b = self.challenger_point, self.baseline_point
        if c is None or b is None or not b.tok_s_per_device:
            return None
        return (c.tok_s_per_device - b.tok_s_per_device) / b.tok_s_per_device * 100.0

    @property
    def margin(self) -> Margin | None:
        """The challenger's $/MTok over the baseline's (the inverse of their throughputs), with its interval over
        the launches; None when there are no matched points."""
        c, b = self.challenger_point, self.baseline_point
        if c is None or b is None:
            return None
        return cost_margin(b.launch_tok_s, c.launch_tok_s)

    @property
    def throughput_margin(self) -> Margin | None:
        """The challenger's tok/s per device over the baseline's, with its interval over the launches."""
        c, b = self.challenger_point, self.baseline_point
        return margin(b.launch_tok_s, c.launch_tok_s) if c is not None and b is not None else None


def _axis_rank(matrix: Matrix, axis: str, value: str) -> int:
    """Position of a value on the matrix's axis: the first value listed is the baseline of a comparison."""
    values = [v if isinstance(v, str) else v.label for v in getattr(matrix.axes, axis)]
    return values.index(value) if value in values else len(values)


MIN_OVERLAP = 0.05
"""Frontiers overlapping by less than this fraction of interactivity are not compared: inside a band that narrow,
interpolation reads run-to-run noise (a near-vertical frontier turns a 1% shift into a 5x throughput gap)."""


def _targets(a: Series, b: Series, slo_interactivity: float | None) -> list[float]:
    lo = max(a.frontier[0].interactivity, b.frontier[0].interactivity)
    hi = min(a.frontier[-1].interactivity, b.frontier[-1].interactivity)
    if hi - lo < MIN_OVERLAP * hi:
        return []
    targets = [lo, (lo + hi) / 2, hi] if hi > lo else [lo]
    if slo_interactivity is not None and lo <= slo_interactivity <= hi:
        # the SLO's point replaces any target within 5% of it: two near-identical rows say nothing more
        targets = [x for x in targets if abs(x - slo_interactivity) > 0.05 * slo_interactivity]
        targets.append(slo_interactivity)
    return sorted(set(targets))  # exact values: a rounded end could fall just outside a frontier


def compare_matched(series: Sequence[Series], matrix: Matrix, slo_interactivity: float | None = None
                    ) -> list[Comparison]:
    """Every pair of series of a panel that differ on exactly one axis, at matched interactivities.

    A pair whose frontiers do not overlap in interactivity (by at least ``MIN_OVERLAP``) yields one comparison
    with no points, so the report can say so rather than compare unlike operating points.
    """
    found = []
    for a in series:
        for b in series:
            differing = [axis for axis in SERIES_AXES if a.axis(axis) != b.axis(axis)]
            if a.panel != b.panel or len(differing) != 1 or not a.frontier or not b.frontier:
                continue
            axis = differing[0]
            if _axis_rank(matrix, axis, a.axis(axis)) <= _axis_rank(matrix, axis, b.axis(axis)):
                continue  # each pair once, with the value listed first on the axis as the baseline
            points = [(x, at_interactivity(a, x), at_interactivity(b, x)) for x in _targets(a, b, slo_interactivity)]
            matched = [(x, pa, pb) for x, pa, pb in points if pa is not None and pb is not None]
            if not matched:
                found.append(Comparison(a.panel, axis, a, b, None, None, None))
            for x, pa, pb in matched:
                found.append(Comparison(a.panel, axis, a, b, x, pa, pb))
    return found
