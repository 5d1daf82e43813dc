"""How sure a comparison of two measured cells is, from the server launches behind each.

The noise a comparison of two recipes must clear is the launch-to-launch noise: each server launch lands in its
own place (cores, memory, the machine's drift), so two launches of one configuration differ by more than two
repeats on one launch do. A cell measured on several launches (``CellSummary.launches`` > 1) keeps one figure per
launch in its spread; a cell measured on one launch has one figure, however often it repeated there, because its
repeats share that launch's luck and say nothing of the next launch's.

``Margin`` holds the interval of one ratio between two sides (``harness.metrics.intervals``) and states it the one
way the report uses everywhere: a lead outside the launch noise, a tie inside it, or, with one launch on each side,
noise unknown and so no finding. The analysis stages (``recommend``, ``cost_levers``, ``frontier``) build their
margins here; the report only prints ``Margin.describe``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from harness.metrics.cell_summary import CellSummary
from harness.metrics.intervals import RatioInterval, lead, ratio_interval

ONE_LAUNCH_EACH = "noise unknown (one launch each)"
"""What a comparison says when neither side measured the launch noise."""
TIE = "tie (inside the launch noise)"
"""What a comparison says when its interval holds 1: neither side leads."""
OUTSIDE = "outside the launch noise"
NO_INTERVAL = "noise unknown (a launch figure is missing or 0)"

Call = Literal["a", "b", "tie", "unknown"]


def launch_throughputs(summary: CellSummary) -> tuple[float, ...]:
    """The cell's output tok/s per server launch; its one figure when it ran on one launch (repeats on one
    launch are not launches)."""
    spread = summary.spread.get("output_throughput")
    if summary.launches > 1 and spread is not None and len(spread.values) == summary.launches:
        return spread.values
    return (summary.output_throughput,)


@dataclass(frozen=True, slots=True)
class Margin:
    """B against A: the ratio B / A over their launches, with its interval when the launches allow one."""

    interval: RatioInterval | None
    """Ratio of geometric means with its 95% interval; None with fewer than three launch figures in all."""
    launches: tuple[int, int]
    """Launch figures behind A and behind B."""

    @property
    def call(self) -> Call:
        """``b`` or ``a`` when that side's figure is larger outside the noise; ``tie``; ``unknown`` without an
        interval."""
        return "unknown" if self.interval is None else lead(self.interval)

    @property
    def conclusive(self) -> bool:
        return self.call in ("a", "b")

    @property
    def standing(self) -> str:
        """The verdict alone: ``outside the launch noise``, ``tie (inside the launch noise)`` or ``noise unknown
        (one launch each)``."""
        if self.interval is None:
            return ONE_LAUNCH_EACH if max(self.launches, default=0) <= 1 else NO_INTERVAL
        return TIE if self.call == "tie" else OUTSIDE

    def describe(self, what: str) -> str:
        """The report's one statement of this margin; ``what`` names the ratio (``$/MTok``):
        ``$/MTok 1.18x [1.05, 1.33] over 3 and 3 launches, outside the launch noise``,
        ``tie (inside the launch noise), $/MTok 1.04x [0.90, 1.20] over 3 and 3 launches``,
        ``noise unknown (one launch each), not a finding``."""
        interval = self.interval
        if interval is None:
            return f"{self.standing}, not a finding"
        over = f"{what} {interval.text()} over {interval.n_a} and {interval.n_b} launches"
        return f"{TIE}, {over}" if self.call == "tie" else f"{over}, {OUTSIDE}"


def margin(a: Sequence[float], b: Sequence[float]) -> Margin:
    """B / A from each side's figures, one per launch (independent launches; see ``ratio_interval``)."""
    return Margin(ratio_interval(a, b), (len(a), len(b)))


def cost_margin(a_tok_s: Sequence[float], b_tok_s: Sequence[float]) -> Margin:
    """B's $/MTok over A's, from each side's throughput per launch: one matrix prices every replica alike, so a
    token's cost is the inverse of the throughput, launch by launch."""
    if min(a_tok_s, default=0.0) <= 0 or min(b_tok_s, default=0.0) <= 0:
        return Margin(None, (len(a_tok_s), len(b_tok_s)))
    return margin([1.0 / v for v in a_tok_s], [1.0 / v for v in b_tok_s])


def cell_cost_margin(a: CellSummary, b: CellSummary) -> Margin:
    """Cell B's $/MTok over cell A's, over their launches."""
    return cost_margin(launch_throughputs(a), launch_throughputs(b))
