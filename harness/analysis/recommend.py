"""The ship recipe: per model and workload, the cheapest measured cell that meets the SLO and passes parity.

Inputs are the priced cells, the matrix's SLO, the parity verdicts stored beside the cells, and the frontiers.
A failed or unrun cell is never a candidate. The winner is a measured cell; the frontier at the SLO's
interactivity is shown beside it as an interpolated operating point, labelled as such, because a point between
two measured concurrencies is a prediction to measure, not a result to ship. The runner-up is the cheapest
qualifying cell of another series, and every other series gets the reason it lost.

Every margin between two cells (the runner-up's, each loser's) carries the interval of its $/MTok ratio over the
launches of both cells (``harness.analysis.noise``): a lead inside the launch noise is a tie, and with one launch
each the noise is unknown, so the margin is a point reading and the report says it is not a finding. The ranking
itself stays on the cells' figures; the margin says how far to trust it.

SLO rules: ``ttft_p99_ms`` bounds the p99 TTFT and ``tpot_p50_ms`` the median TPOT; the per-request bounds
``ttft_ms`` / ``tpot_ms`` must hold for 99% of requests, i.e. they bound the p99. A cell is judged against them by its
figures; each bound also carries its claim (``harness.metrics.slo_claims``: met, missed or insufficient samples by
LoadGen's early-stopping bound), and a recommendation whose bounds the requests cannot support says so and how
many requests would. Parity: when the matrix has a
``parity`` section, a cell at the model's reference precision passes by definition (on the reference runtime,
where ``parity.reference_runtime`` names one: another runtime serving those weights is judged), any other cell needs a
stored verdict that passed conclusively (its sample had ``parity.min_power`` against a 5-point drop: a pass on
zeros, or on too few items, is not evidence); without the section parity is not part of the decision and the
report says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.analysis.cost import PricedCell
from harness.analysis.frontier import OperatingPoint, Series, at_interactivity
from harness.analysis.noise import Margin, cell_cost_margin
from harness.config.matrix import Matrix, Slo
from harness.metrics.cell_summary import CellSummary
from harness.parity.cell_parity import CellParity

SLO_QUANTILE_NOTE = "the per-request bounds ttft_ms and tpot_ms must hold for 99% of requests: they bound the p99"


def slo_interactivity(slo: Slo) -> float | None:
    """The interactivity the SLO's TPOT bound implies (1000 / TPOT ms); None without a TPOT bound."""
    bound = slo.tpot_p50_ms or slo.tpot_ms
    return 1000.0 / bound if bound else None


def slo_misses(summary: CellSummary, slo: Slo) -> list[str]:
    """Each SLO bound the cell misses, with measured and allowed values; empty when it meets the SLO."""
    checks = (("TTFT p99", summary.ttft_ms, "p99", slo.ttft_p99_ms), ("TPOT p50", summary.tpot_ms, "median",
              slo.tpot_p50_ms), ("TTFT p99", summary.ttft_ms, "p99", slo.ttft_ms),
              ("TPOT p99", summary.tpot_ms, "p99", slo.tpot_ms))
    misses = []
    for name, stats, field, bound in checks:
        if bound is None:
            continue
        value = getattr(stats, field) if stats is not None else None
        if value is None:
            misses.append(f"{name} not measured")
        elif value > bound:
            misses.append(f"{name} {value:,.1f} ms > {bound:,.1f} ms")
    return misses


def slo_unsupported(summary: CellSummary) -> list[str]:
    """Each SLO bound the cell's requests are too few to claim either way (LoadGen's early-stopping bound), with
    the number a claim would need; the cell is still judged by its figures, and the report says this beside them."""
    return [c.reason for c in summary.slo_claims if c.verdict == "insufficient samples"]


@dataclass(frozen=True, slots=True)
class Judged:
    """A measured cell with the verdicts that decide whether it may ship."""

    row: PricedCell
    misses: tuple[str, ...]
    parity: str | None
    """Why parity disqualifies the cell, or None when it does not."""

    @property
    def qualifies(self) -> bool:
        return not self.misses and self.parity is None

    @property
    def tok_s_per_device(self) -> float:
        return self.row.cost.tok_s_per_device if self.row.cost is not None else 0.0

    def cost_margin(self, other: Judged) -> Margin:
        """``other``'s $/MTok over this cell's, over the launches of both."""
        mine, theirs = self.row.summary, other.row.summary
        assert mine is not None and theirs is not None  # a judged cell was measured
        return cell_cost_margin(mine, theirs)


def _parity_block(row: PricedCell, matrix: Matrix, verdict: CellParity | None) -> str | None:
    if matrix.parity is None:
        return None
    server = row.cell.server
    if server.precision == server.model.reference.precision and matrix.parity.references(server.runtime):
        return None
    if verdict is None or verdict.passed is None:
        return "parity not measured"
    if not verdict.passed:
        delta = f" (Δ {verdict.delta_pp:+.1f} pp, limit -{matrix.parity.max_drop_pp:.1f} pp)" \
            if verdict.delta_pp is not None else ""
        return f"fails parity{delta}"
    if not verdict.conclusive:
        # The gate did not fail it, but its sample could not have seen the drop: shipping a cheaper precision on
        # that would be a verdict taken on an empty signal (parity.min_power: 0 lets every pass count).
        weak = verdict.comparisons[verdict.decoding or "free"]
        return (f"parity inconclusive ({verdict.decoding}: {weak.power or 0:.1%} power against a "
                f"{weak.power_drop_pp:g}-point drop at {weak.paired_items} items)")
    return None


def _series_name(row: PricedCell) -> str:
    s = row.cell.server
    deployed = "" if s.topology.is_colocated else f"/{s.topology.label}"
    return f"{s.runtime}/{s.precision.label}/{s.speculation.label}{deployed}"


@dataclass(frozen=True, slots=True)
class SeriesOutcome:
    series: str
    reason: str


@dataclass(frozen=True, slots=True)
class PanelRecommendation:
    """The decision for one model and workload."""

    model: str
    workload: str
    ship: Judged | None
    runner_up: Judged | None
    outcomes: tuple[SeriesOutcome, ...]
    """Every series but the ship recipe's, with the reason it lost."""
    operating_points: tuple[tuple[str, OperatingPoint], ...]
    """Per series, the frontier at the SLO's interactivity (interpolated, not measured)."""
    parity_checked: bool
    measured_cells: int
    slo_note: str
    """Where the frontiers lie against the SLO's interactivity when none of them spans it."""

    @property
    def headroom(self) -> OperatingPoint | None:
        """The ship recipe's own frontier at the SLO's interactivity, when it promises more than the shipped cell:
        a concurrency between two measured ones worth measuring next."""
        if self.ship is None:
            return None
        name = _series_name(self.ship.row)
        point = next((p for series, p in self.operating_points if series == name), None)
        if point is None or point.measured or point.tok_s_per_device <= self.ship.tok_s_per_device:
            return None
        return point

    def pct_dearer(self, other: Judged) -> float | None:
        if self.ship is None or not other.tok_s_per_device:
            return None
        return (self.ship.tok_s_per_device / other.tok_s_per_device - 1.0) * 100.0

    @property
    def runner_up_margin(self) -> Margin | None:
        """The runner-up's $/MTok over the ship recipe's, with its interval over both cells' launches."""
        if self.ship is None or self.runner_up is None:
            return None
        return self.ship.cost_margin(self.runner_up)


def _lost_because(rows: Sequence[PricedCell], judged: Sequence[Judged], rec_ship: Judged | None) -> str:
    if not judged:
        failed = [r for r in rows if r.result is not None and r.status == "failed"]
        if failed:
            return f"no measured cell: {len(failed)} failed ({failed[0].result.reason if failed[0].result else ''})"
        return "no measured cell (not run)"
    qualifying = [j for j in judged if j.qualifies]
    if not qualifying:
        closest = min(judged, key=lambda j: (len(j.misses) + (j.parity is not None), -j.tok_s_per_device))
        why = "; ".join([*closest.misses, *([closest.parity] if closest.parity else [])])
        return f"no cell meets the SLO and parity; closest is c{closest.row.cell.concurrency}: {why}"
    best = max(qualifying, key=lambda j: j.tok_s_per_device)
    if rec_ship is None:
        return "qualifies"
    pct = (rec_ship.tok_s_per_device / best.tok_s_per_device - 1.0) * 100.0 if best.tok_s_per_device else 0.0
    cost = f"costs {pct:.0f}% more per output token than" if pct >= 0.5 else "costs the same per output token as"
    noise = rec_ship.cost_margin(best).describe("$/MTok")
    return f"its cheapest qualifying cell (c{best.row.cell.concurrency}) {cost} the ship recipe; {noise}"


def _slo_note(series: Sequence[Series], x_slo: float | None) -> str:
    if x_slo is None or not series:
        return "No frontier to read at the SLO's interactivity."
    if all(s.frontier[0].interactivity > x_slo for s in series):
        return (f"Every recipe stays faster than the SLO's {x_slo:,.1f} tok/s/user even at its highest measured "
                "concurrency: the TPOT bound does not bind in this matrix, and higher concurrency would find where it "
                "does (and cheaper tokens before it).")
    if all(s.frontier[-1].interactivity < x_slo for s in series):
        return (f"No recipe reaches the SLO's {x_slo:,.1f} tok/s/user at any measured concurrency, not even its "
                "lowest.")
    return f"No recipe's frontier spans the SLO's {x_slo:,.1f} tok/s/user, so none is read there."


def recommend(rows: Sequence[PricedCell], matrix: Matrix, series: Sequence[Series],
              parity: Mapping[str, CellParity]) -> list[PanelRecommendation]:
    """The ship recipe, runner-up and the losers' reasons for every (model, workload) of the matrix."""
    x_slo = slo_interactivity(matrix.slo)
    panels: dict[tuple[str, str], list[PricedCell]] = {}
    for row in rows:
        panels.setdefault((row.cell.server.model_name, row.cell.workload_name), []).append(row)
    decisions = []
    for (model, workload), panel_rows in panels.items():
        judged = [Judged(r, tuple(slo_misses(r.summary, matrix.slo)),
                         _parity_block(r, matrix, parity.get(r.cell.cell_id)))
                  for r in panel_rows if r.summary is not None and r.cost is not None]
        ranked = sorted((j for j in judged if j.qualifies), key=lambda j: -j.tok_s_per_device)
        ship = ranked[0] if ranked else None
        runner_up = next((j for j in ranked if ship and _series_name(j.row) != _series_name(ship.row)), None)
        names = list(dict.fromkeys(_series_name(r) for r in panel_rows))
        outcomes = tuple(
            SeriesOutcome(name, _lost_because([r for r in panel_rows if _series_name(r) == name],
                                                    [j for j in judged if _series_name(j.row) == name], ship))
            for name in names if ship is None or name != _series_name(ship.row))
        points = tuple((s.name, point) for s in series if s.panel == (model, workload) and x_slo is not None
                       and (point := at_interactivity(s, x_slo)) is not None)
        panel_series = [s for s in series if s.panel == (model, workload) and s.frontier]
        decisions.append(PanelRecommendation(model, workload, ship, runner_up, outcomes, points,
                                             parity_checked=matrix.parity is not None, measured_cells=len(judged),
                                             slo_note=_slo_note(panel_series, x_slo)))
    return decisions
