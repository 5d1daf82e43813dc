"""The decision for one model and workload as the report shows it: ``harness.analysis.recommend``'s verdict with
the ship recipe's and runner-up's rows, and the runner-up's margin stated against the launch noise."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from harness.analysis.frontier import OperatingPoint
from harness.analysis.noise import Margin
from harness.analysis.recommend import PanelRecommendation, SeriesOutcome
from harness.report.rows import CellRow
from harness.report.sections import Anchors


@dataclass(frozen=True, slots=True)
class Recommendation:
    """The decision for one model and workload (``harness.analysis.recommend``), with its cells' figures."""

    model: str
    workload: str
    ship: CellRow | None
    runner_up: CellRow | None
    runner_up_dearer_pct: float | None
    """How much more the runner-up costs per output token than the ship recipe, percent."""
    runner_up_margin: Margin | None
    """The runner-up's $/MTok over the ship recipe's over both cells' launches: a lead, a tie, or noise unknown."""
    runner_up_noise: str | None
    """``runner_up_margin`` as the report states it."""
    candidates: tuple[tuple[str, CellRow], ...]
    """The ship recipe and runner-up that exist, tagged (``ship``, ``runner-up``)."""
    outcomes: tuple[SeriesOutcome, ...]
    operating_points: tuple[tuple[str, OperatingPoint], ...]
    headroom: OperatingPoint | None
    parity_checked: bool
    measured_cells: int
    slo_note: str
    anchor: str = ""
    """The id of its table in the appendix, which the narrative's figures of it link to."""


def recommendation(decision: PanelRecommendation, rows: Mapping[str, CellRow]) -> Recommendation:
    """The decision with its cells' rows (``rows`` by cell id)."""
    ship = rows[decision.ship.row.cell.cell_id] if decision.ship else None
    runner_up = rows[decision.runner_up.row.cell.cell_id] if decision.runner_up else None
    margin = decision.runner_up_margin
    return Recommendation(
        model=decision.model, workload=decision.workload, ship=ship, runner_up=runner_up,
        runner_up_dearer_pct=decision.pct_dearer(decision.runner_up) if decision.runner_up else None,
        runner_up_margin=margin, runner_up_noise=margin.describe("$/MTok") if margin is not None else None,
        candidates=tuple((tag, row) for tag, row in (("ship", ship), ("runner-up", runner_up)) if row),
        outcomes=decision.outcomes, operating_points=decision.operating_points, headroom=decision.headroom,
        parity_checked=decision.parity_checked, measured_cells=decision.measured_cells, slo_note=decision.slo_note,
        anchor=Anchors.panel(decision.model, decision.workload))
