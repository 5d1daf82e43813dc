"""The narrative that opens the report: per model and workload, the recipe to ship and its defence, gathered from
what the appendices already hold, so that every number the narrative states is one an appendix table shows.

A reviewer signs off on the first page: the recommendation, its margin over the runner-up with that margin's
interval, its parity verdict and its $/MTok. The defence that follows states each of throughput, latency, parity
and cost once, with the launch-to-launch spread behind it; the levers say what each axis bought against the
capstone lecture's claims; the risks say what the numbers cannot carry. Nothing here is judged again: the decisions are
``harness.analysis.recommend``'s, the margins ``harness.analysis.noise``'s, the parity verdicts as stored. What it
says about speculation (a speculative ship recipe's twin, each method's ends) is gathered in
``harness.report.narrative_speculation``; its figures are drawn by ``harness.report.narrative_plots``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.analysis.cost import CellCost, PricedCell
from harness.analysis.recommend import slo_misses
from harness.analysis.speculation_crossover import Crossover
from harness.config.matrix import Matrix
from harness.metrics.cell_summary import CellSummary
from harness.metrics.slo_claims import BOUNDS, SloClaim
from harness.report.costs import CostAndFrontiers
from harness.report.evidence import Evidence, ParityColumn, ParitySummaryRow
from harness.report.load_shapes import SearchView
from harness.report.narrative_plots import CostBar, cost_figure, lever_figure
from harness.report.narrative_speculation import (
    SpeculationDefence,
    SpeculationLine,
    speculation_defence,
    speculation_lines,
)
from harness.report.recommendation import Recommendation
from harness.report.rows import CellRow, PairRow
from harness.servers.runtime_lookup import get_runtime
from harness.store import Store

# the figure of a latency each SLO bound's percentile reads (the bounds themselves: slo_claims.BOUNDS)
_FIGURE = {0.99: "p99", 0.50: "median"}


def recipe(row: CellRow) -> str:
    """A cell's recipe without its model: ``vllm/bf16/tp1/mtp1``."""
    server = row.cell.server
    return server.label.removeprefix(f"{server.model_name}/")


@dataclass(frozen=True, slots=True)
class BoundCheck:
    """One bound of the SLO against the ship cell's figure, with that figure's lowest and highest launch."""

    name: str
    measured: float | None
    bound: float
    launches: tuple[float, float] | None
    """The figure's lowest and highest value over the cell's launches; None with one launch."""
    claim: SloClaim | None = None
    """The bound judged on the cell's requests by the sample size a claim at its percentile needs."""


@dataclass(frozen=True, slots=True)
class ParityStanding:
    """One server's parity as the decision read it."""

    precision: str
    verdict: str
    """``reference`` (passes by definition), ``pass``, ``inconclusive`` (passed on a sample too weak to see a drop),
    ``fail``, ``not judged`` or ``not measured``."""
    free: ParityColumn | None = None
    """Its stored single-turn comparison with the reference, when it has one."""
    drop_not_excluded: bool = False
    """The interval of Δ reaches below the allowed drop: a pass there says the drop was not seen, not that there
    is none."""
    rerun: ParityStanding | None = None
    """At the reference precision: its rerun judged against its first run (``parity.rerun_reference``)."""
    weak: ParityColumn | None = None
    """When the verdict is ``inconclusive``: the decoding whose sample lacked the power to see a drop."""


@dataclass(frozen=True, slots=True)
class Decision:
    """One model and workload's recommendation, with the figures its defence states."""

    rec: Recommendation
    ship_recipe: str
    runner_up_recipe: str
    launches: int
    """Server launches behind the ship cell's figures."""
    throughput: tuple[float, float] | None
    """The ship cell's output tok/s per device on its slowest and fastest launch; None with one launch."""
    bounds: tuple[BoundCheck, ...]
    parity: ParityStanding
    judged: tuple[ParityStanding, ...]
    """Every server of the model with a stored parity verdict: what the cheaper precisions showed (stated with the
    model's first decision only)."""
    others: int
    """Recipes of this model and workload that lost, the runner-up's included."""
    searches: tuple[SearchView, ...] = ()
    """The SLO searches of this model and workload: the most load a recipe carries inside the SLO."""
    speculation: SpeculationDefence | None = None
    """When the ship recipe speculates: what speculation does at its concurrency, and where it stops paying."""


def _launch_range(summary: CellSummary, name: str, scale: float = 1.0) -> tuple[float, float] | None:
    spread = summary.spread.get(name)
    if summary.launches < 2 or spread is None:
        return None
    return min(spread.values) * scale, max(spread.values) * scale


def _bounds(row: CellRow, summary: CellSummary, matrix: Matrix) -> tuple[BoundCheck, ...]:
    found = []
    claims = {c.field: c for c in summary.slo_claims}
    for field, name, latency, percentile in BOUNDS:
        figure = _FIGURE[percentile]
        bound = getattr(matrix.slo, field)
        if bound is not None:
            found.append(BoundCheck(name, getattr(getattr(row, latency), figure), bound,
                                    _launch_range(summary, f"{latency}_ms.{figure}"), claims.get(field)))
    return tuple(found)


def _standing(row: ParitySummaryRow, evidence: Evidence, *, rerun: bool = False, runtime: str = "") -> ParityStanding:
    spec, free = evidence.parity_spec, row.free
    # A rerun is the free column alone: the reference's other decodings are compared with themselves.
    verdict = free.verdict if rerun and free else row.verdict
    columns = (free,) if rerun else (free, row.multi_turn, row.grammar)
    weak = next((c for c in columns if c is not None and c.verdict == "inconclusive"), None)
    # Only a pass can hide a drop: a failed verdict's interval is past the allowed drop by definition.
    reaches = (verdict == "pass" and spec is not None and free is not None and free.ci_pp is not None
               and free.ci_pp[0] < -spec.max_drop_pp)
    # Judged across runtimes (parity.reference_runtime), the precision alone would not say which server it was.
    name = row.precision if not runtime or row.runtime == runtime else f"{row.runtime} {row.precision}"
    return ParityStanding(name, verdict, free, reaches, weak=weak)


def _parity(row: CellRow, evidence: Evidence) -> ParityStanding:
    server = row.cell.server
    if evidence.parity_spec is None:
        return ParityStanding(server.precision.label, "not measured")
    stored = next((r for r in evidence.parity_summary if r.server == server.label), None)
    if server.precision == server.model.reference.precision and evidence.parity_spec.references(server.runtime):
        rerun = _standing(stored, evidence, rerun=True) if stored and stored.free and stored.free.rerun else None
        return ParityStanding(server.precision.label, "reference", rerun=rerun)
    return _standing(stored, evidence) if stored else ParityStanding(server.precision.label, "not judged")


def _judged(row: CellRow, evidence: Evidence) -> tuple[ParityStanding, ...]:
    """The stored parity verdicts of the other precisions of ``row``'s model, each against its reference, and of
    the other runtimes judged against this one (``parity.reference_runtime``)."""
    server = row.cell.server
    spec = evidence.parity_spec
    return tuple(_standing(r, evidence, runtime=server.runtime) for r in evidence.parity_summary
                 if r.server.startswith(f"{server.model_name}/") and r.server != server.label
                 and (r.precision != server.precision.label
                      or (spec is not None and not spec.references(r.runtime))))


def _cost_bars(panel: Sequence[PricedCell], ship: str | None, runner_up: str | None,
               meets: Mapping[str, bool]) -> tuple[CostBar, ...]:
    """Per recipe of one panel, its cheapest cell inside the SLO, with the interval of its $/MTok over launches."""
    best: dict[str, tuple[PricedCell, CellSummary, CellCost]] = {}
    for row in panel:
        summary, cost = row.summary, row.cost
        if summary is None or cost is None or not meets.get(row.cell.cell_id):
            continue
        name = row.cell.server.label.removeprefix(f"{row.cell.server.model_name}/")
        if name not in best or cost.output_tok_s > best[name][2].output_tok_s:
            best[name] = (row, summary, cost)
    bars = []
    for name, (row, summary, cost) in best.items():
        usd = cost.usd_per_mtok_output
        spread = summary.spread.get("output_throughput")
        interval = None
        if usd is not None and spread is not None and summary.launches > 1 and spread.ci_low > 0:
            interval = (usd * spread.median / spread.ci_high, usd * spread.median / spread.ci_low)
        role = "ship" if row.cell.cell_id == ship else "runner-up" if row.cell.cell_id == runner_up else "other"
        if usd is not None:
            bars.append(CostBar(f"{name} c{row.cell.concurrency}", usd, interval, role))
    return tuple(sorted(bars, key=lambda b: b.usd_per_mtok))


@dataclass(frozen=True, slots=True)
class Narrative:
    """What the opening pages state, beyond what the rest of the context already holds."""

    decisions: tuple[Decision, ...]
    cost_figure: str | None
    """Each recipe's $/MTok inside the SLO, per model and workload, with its interval; relative to the report."""
    lever_figure: str | None
    """Each lever's change in $/MTok beside the capstone lecture's claimed range; relative to the report."""
    speculation: tuple[SpeculationLine, ...]
    launches: int
    """The most server launches behind any cell: 1 means no comparison has an interval."""
    tpot_slack: bool
    """Every recipe stays faster than the SLO's TPOT bound at its highest measured concurrency: the bound does not
    bind, and higher concurrency would find cheaper tokens."""
    cpu_scale: bool
    """Measured on a CPU machine: the figures are this setup's, not a GPU deployment's."""
    runtime_caveats: tuple[tuple[str, str], ...]
    """(runtime, what its CPU figures are) for each measured runtime that declares a CPU caveat."""
    dirty: tuple[str, ...]
    """Which locks record uncommitted code (``this run``, ``the committed baseline``)."""


@dataclass(frozen=True, slots=True)
class NarrativeInputs:
    """What the narrative is gathered from: the report's other groups, already computed, so it judges nothing."""

    recommendations: Sequence[Recommendation]
    priced: Sequence[PricedCell]
    cost: CostAndFrontiers
    evidence: Evidence
    pairs: Sequence[PairRow]
    searches: Sequence[SearchView]
    dirty: tuple[str, ...]
    """Which locks record uncommitted code."""
    crossovers: Sequence[Crossover] = ()


def build_narrative(inputs: NarrativeInputs, matrix: Matrix, store: Store) -> Narrative:
    """The narrative's decisions and figures; draws its two figures into the store's ``plots/``."""
    recommendations, priced, cost, pairs = inputs.recommendations, inputs.priced, inputs.cost, inputs.pairs
    evidence, searches, crossovers = inputs.evidence, inputs.searches, inputs.crossovers
    meets = {r.cell.cell_id: not slo_misses(r.summary, matrix.slo) for r in priced if r.summary is not None}
    summaries = {r.cell.cell_id: r.summary for r in priced if r.summary is not None}
    decisions, panels = [], []
    stated: set[str] = set()  # models whose parity verdicts an earlier decision states
    for rec in recommendations:
        ship, runner_up = rec.ship, rec.runner_up
        summary = summaries[ship.cell.cell_id] if ship else None
        devices = cost.price.devices
        decisions.append(Decision(
            rec=rec, ship_recipe=recipe(ship) if ship else "", runner_up_recipe=recipe(runner_up) if runner_up else "",
            launches=summary.launches if summary else 0,
            throughput=_launch_range(summary, "output_throughput", 1 / devices) if summary else None,
            bounds=_bounds(ship, summary, matrix) if ship and summary else (),
            parity=_parity(ship, evidence) if ship else ParityStanding("", "not measured"),
            judged=_judged(ship, evidence) if ship and rec.model not in stated else (),
            others=len(rec.outcomes),
            searches=tuple(v for v in searches
                           if (v.search.server.model_name, v.search.workload_name) == (rec.model, rec.workload)),
            speculation=speculation_defence(ship, pairs, crossovers) if ship else None))
        stated.add(rec.model)
        panel = [r for r in priced if (r.cell.server.model_name, r.cell.workload_name) == (rec.model, rec.workload)]
        panels.append((f"{rec.model} · {rec.workload}", _cost_bars(
            panel, ship.cell.cell_id if ship else None, runner_up.cell.cell_id if runner_up else None, meets)))
    x_slo = cost.x_slo
    return Narrative(
        decisions=tuple(decisions),
        cost_figure=cost_figure(panels, store, cost.price.unit),
        lever_figure=lever_figure(cost.levers, store),
        speculation=speculation_lines(pairs, crossovers),
        launches=max((s.launches for s in summaries.values()), default=0),
        tpot_slack=x_slo is not None and bool(cost.series)
        and all(s.frontier[0].interactivity > x_slo for s in cost.series),
        cpu_scale=matrix.hardware.kind == "cpu", runtime_caveats=_runtime_caveats(priced, matrix),
        dirty=inputs.dirty)


def _runtime_caveats(priced: Sequence[PricedCell], matrix: Matrix) -> tuple[tuple[str, str], ...]:
    if matrix.hardware.kind != "cpu":
        return ()
    runtimes = sorted({r.cell.server.runtime for r in priced if r.summary is not None})
    return tuple((name, caveat) for name in runtimes if (caveat := get_runtime(name).cpu_caveat))
