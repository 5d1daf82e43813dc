"""What a token costs and how the recipes trade throughput for interactivity: the priced cells, their frontiers
and the cost levers against the capstone lecture's claims, gathered for the report (sections "Frontiers" and
"What a token costs"). The analysis is ``harness.analysis``'s; this module only collects what the templates show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from harness.analysis.cost import (
    LECTURE_EXAMPLE,
    PricedCell,
    ReplicaPrice,
    WorkedExample,
    load_price_table,
    replica_price,
)
from harness.analysis.cost_levers import LECTURE_CLAIMS, UNMEASURED_CLAIMS, LectureClaim, Lever, measure_levers
from harness.analysis.frontier import MIN_OVERLAP, SERIES_AXES, Comparison, Series, build_series, compare_matched
from harness.analysis.recommend import slo_interactivity
from harness.config.matrix import Matrix
from harness.report.comparison_groups import ComparisonGroup, PanelComparisons, by_axis, group_comparisons
from harness.report.plots import frontier_plots
from harness.report.rows import FrontierRow, frontier_rows
from harness.store import Store


def matrix_price(matrix: Matrix) -> ReplicaPrice:
    """The replica's price and power (inputs), from the table the matrix names, resolved from the working dir."""
    return replica_price(matrix, load_price_table(matrix.cost, Path.cwd()))


@dataclass(frozen=True, slots=True)
class CostAndFrontiers:
    """The cost of a token on every measured cell, the recipes' frontiers, and the levers that move the cost."""

    price: ReplicaPrice
    """One replica's price and all-in power: inputs, with their source."""
    power_measured: bool
    """Whether some cell's tok/s/MW uses power measured during it (NVML) rather than the table's."""
    power_available: bool
    """Whether tok/s/MW exists at all: measured power, or a table figure for this hardware."""
    lecture_example: WorkedExample
    levers: tuple[Lever, ...]
    unmeasured_claims: tuple[LectureClaim, ...]
    """The capstone lecture's claims on axes this matrix does not vary."""
    lecture_not_measurable: tuple[str, ...]
    """The capstone lecture's claims no matrix of this harness can measure."""
    # frontiers
    x_slo: float | None
    """The SLO's interactivity (1000 / the TPOT bound), tok/s/user; None when the SLO sets no TPOT bound."""
    series: tuple[Series, ...]
    frontier_rows: tuple[FrontierRow, ...]
    plots: Mapping[tuple[str, str], str]
    """The frontier figure of each (model, workload), relative to the report; empty when none was drawn."""
    comparisons: tuple[Comparison, ...]
    matched_comparisons: tuple[Comparison, ...]
    """The comparisons at a matched interactivity (the others' frontiers do not overlap)."""
    comparison_groups: tuple[ComparisonGroup, ...]
    """The comparisons grouped per pair of recipes, with the ranges they moved over, where their frontiers overlap."""
    apart_groups: tuple[ComparisonGroup, ...]
    """The pairs of recipes whose frontiers do not overlap enough to compare: named once, together."""
    comparison_axes: tuple[tuple[str, tuple[PanelComparisons, ...]], ...]
    """The groups against each axis's baseline, by axis and panel: one sentence per axis in the narrative."""
    min_overlap_pct: float
    """How much two frontiers must overlap in interactivity to be compared, percent."""


def _unmeasured_claims(levers: Sequence[Lever]) -> tuple[LectureClaim, ...]:
    measured = {lever.claim.text for lever in levers if lever.claim}
    # several claims share a text (MTP / EAGLE): the first stands for all
    return tuple({c.text: c for c in LECTURE_CLAIMS if c.text not in measured}.values())


def _axis_baselines(matrix: Matrix) -> dict[str, str]:
    """Each recipe axis's first value: the baseline its other values are compared against."""
    return {axis: values[0] if isinstance(values[0], str) else values[0].label
            for axis in SERIES_AXES if (values := getattr(matrix.axes, axis))}


def cost_and_frontiers(rows: Sequence[PricedCell], matrix: Matrix, price: ReplicaPrice, store: Store
                       ) -> CostAndFrontiers:
    """Price, frontiers and levers of the stored cells; draws the frontier figures into the store's ``plots/``."""
    series = build_series(rows)
    x_slo = slo_interactivity(matrix.slo)
    levers = tuple(measure_levers(rows, matrix))
    comparisons = tuple(compare_matched(series, matrix, x_slo))
    groups = group_comparisons(comparisons)
    power_measured = any(r.cost is not None and r.cost.measured_watts is not None for r in rows)
    return CostAndFrontiers(
        price=price, power_measured=power_measured,
        power_available=power_measured or bool(price.watts_per_device), lecture_example=LECTURE_EXAMPLE,
        levers=levers, unmeasured_claims=_unmeasured_claims(levers), lecture_not_measurable=UNMEASURED_CLAIMS,
        x_slo=x_slo, series=tuple(series), frontier_rows=frontier_rows(series),
        plots=MappingProxyType(frontier_plots(series, store, price.unit, x_slo)),
        comparisons=comparisons, matched_comparisons=tuple(c for c in comparisons if c.interactivity is not None),
        comparison_groups=tuple(g for g in groups if g.matched), apart_groups=tuple(g for g in groups if not g.matched),
        comparison_axes=by_axis(groups, _axis_baselines(matrix)),
        min_overlap_pct=MIN_OVERLAP * 100)
