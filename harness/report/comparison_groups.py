"""The matched-interactivity comparisons grouped by what they show: one recipe against the recipe it differs from
on one axis, over every interactivity both frontiers span.

``harness.analysis.frontier.compare_matched`` reads each pair of recipes at up to four interactivities (the ends of
their overlap, its middle, the SLO's); listed one by one, a matrix of a few recipes yields a wall of near-identical
sentences. An engineer states each pair once, with the range it moved over (``mtp1`` is 18% to 25% cheaper than
``off`` across 40-70 tok/s/user, all 3 outside the launch noise), and gathers the pairs of one axis into one
sentence. This module does that grouping; the per-point figures stay in the appendix's table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.analysis.frontier import Comparison


@dataclass(frozen=True, slots=True)
class ComparisonGroup:
    """One recipe against another of one panel that differs from it on one axis, at every matched interactivity."""

    model: str
    workload: str
    axis: str
    challenger: str
    """The recipe whose axis value is listed later in the matrix (``vllm/bf16/mtp1``)."""
    baseline: str
    """The recipe with the axis value listed first (``vllm/bf16/off``)."""
    challenger_value: str
    """The challenger's value on ``axis`` alone (``mtp1``): how the narrative names it."""
    baseline_value: str
    matched: int
    """Interactivities both frontiers span; 0 when they do not overlap enough to compare."""
    interactivity: tuple[float, float] | None
    """The lowest and highest matched interactivity, tok/s/user."""
    cheaper_pct: tuple[float, float] | None
    """The lowest and highest of how much cheaper per token the challenger is (negative: dearer); None unpriced."""
    more_throughput_pct: tuple[float, float] | None
    """The lowest and highest of how much more tok/s per device the challenger delivers (negative: less)."""
    outside: int
    """Matched comparisons whose interval clears the launch noise."""
    ties: int
    unknown: int
    """Matched comparisons with no interval (one launch on each side)."""

    @property
    def standing(self) -> str:
        """Where the group's comparisons stand against the launch noise, counted: ``all 3 outside the launch noise``,
        ``1 of 3 outside the launch noise, 2 inside it``, ``no interval: one launch each``."""
        if self.unknown == self.matched:
            return "no interval: one launch each"
        if self.outside == self.matched:
            return f"all {self.matched} outside the launch noise" if self.matched > 1 else "outside the launch noise"
        if self.ties == self.matched:
            return f"all {self.matched} inside the launch noise" if self.matched > 1 else "inside the launch noise"
        parts = [f"{self.outside} of {self.matched} outside the launch noise"]
        parts += [f"{self.ties} inside it"] if self.ties else []
        parts += [f"{self.unknown} without an interval"] if self.unknown else []
        return ", ".join(parts)


def _span(values: Sequence[float]) -> tuple[float, float] | None:
    return (min(values), max(values)) if values else None


def _group(found: Sequence[Comparison]) -> ComparisonGroup:
    first = found[0]
    matched = [c for c in found if c.interactivity is not None]
    margins = [m for c in matched if (m := c.margin if c.cheaper_pct is not None else c.throughput_margin)]
    return ComparisonGroup(
        model=first.panel[0], workload=first.panel[1], axis=first.axis, challenger=first.challenger.name,
        baseline=first.baseline.name, challenger_value=first.challenger.axis(first.axis),
        baseline_value=first.baseline.axis(first.axis), matched=len(matched),
        interactivity=_span([c.interactivity for c in matched if c.interactivity is not None]),
        cheaper_pct=_span([v for c in matched if (v := c.cheaper_pct) is not None]),
        more_throughput_pct=_span([v for c in matched if (v := c.more_throughput_pct) is not None]),
        outside=sum(m.conclusive for m in margins), ties=sum(m.call == "tie" for m in margins),
        unknown=sum(m.call == "unknown" for m in margins))


def group_comparisons(comparisons: Sequence[Comparison]) -> tuple[ComparisonGroup, ...]:
    """One group per (panel, challenger, baseline), in the order the comparisons first name them."""
    keyed: dict[tuple[str, str, str, str], list[Comparison]] = {}
    for c in comparisons:
        keyed.setdefault((*c.panel, c.challenger.name, c.baseline.name), []).append(c)
    return tuple(_group(found) for found in keyed.values())


@dataclass(frozen=True, slots=True)
class PanelComparisons:
    """One model and workload's recipes against the axis's baseline: those compared, and those whose frontiers do
    not overlap the baseline's, named together rather than one sentence each."""

    model: str
    workload: str
    baseline_value: str
    matched: tuple[ComparisonGroup, ...]
    apart: tuple[str, ...]
    """The challengers' axis values whose frontiers do not overlap the baseline's enough to compare."""


def by_axis(groups: Sequence[ComparisonGroup], baselines: Mapping[str, str]
            ) -> tuple[tuple[str, tuple[PanelComparisons, ...]], ...]:
    """Per axis, per panel, the recipes against the axis's baseline (``baselines``: its first value), axes and panels
    in the order they first appear: one sentence per axis in the narrative. Two challengers against each other stay
    in the appendix."""
    axes: dict[str, dict[tuple[str, str], list[ComparisonGroup]]] = {}
    for g in groups:
        if baselines.get(g.axis) == g.baseline_value:
            axes.setdefault(g.axis, {}).setdefault((g.model, g.workload), []).append(g)
    return tuple((axis, tuple(
        PanelComparisons(model, workload, found[0].baseline_value, tuple(g for g in found if g.matched),
                         tuple(g.challenger_value for g in found if not g.matched))
        for (model, workload), found in panels.items())) for axis, panels in axes.items())
