"""What the capstone report shows, gathered from disk into one frozen, typed ``ReportContext``.

The report is the engineer's defence of a ship recipe: verdict first, then what was asked (SLO, hardware,
matrix), the recommendation and why every other recipe lost, frontiers, $/MTok, the cost levers against the
capstone lecture's claims, throughput, parity, profiles, the regression gate, this run beside an earlier one on this
machine kind, and the lock and exact commands to reproduce it. It never shows a figure the run did not measure unless
it is labelled as an input (a price, a power figure, a published claim: docs/sources.md); a section with no data
says so.

The analysis is the stages' own (``cost``, ``frontier``, ``levers``, ``recommend``) and the verdicts are read as
stored (``gate.json``, the locks, each cell's ``parity.json``): nothing here judges again. Every guard, filter and
list the report needs is decided here, so the templates only format.

Every comparison the report makes (the runner-up's margin, each loser's, the cost levers, the matched-interactivity
comparisons) states where it stands against the launch-to-launch noise (``harness.analysis.noise``); ``NoiseTally``
counts them so the verdict can say which headline comparisons are not findings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.analysis.cost import PricedCell, price_cells
from harness.analysis.cost_levers import Lever
from harness.analysis.frontier import Comparison
from harness.analysis.recommend import SLO_QUANTILE_NOTE, recommend
from harness.analysis.speculation_effect import BreakEven, break_even, speculation_pairs
from harness.analysis.topology_effect import topology_pairs
from harness.config.matrix import Matrix
from harness.errors import HarnessError
from harness.metrics.cell_summary import METRICS, Metric
from harness.parity import CellParity, find_cell_parity
from harness.plan.cells import Plan
from harness.report.costs import CostAndFrontiers, cost_and_frontiers, matrix_price
from harness.report.evidence import Evidence, gather_evidence
from harness.report.expert_load_section import ExpertLoadView, expert_load_view
from harness.report.formatting import fmt
from harness.report.history_plot import trend_plot
from harness.report.load_shapes import LoadShapes, load_shapes
from harness.report.measured_vs_predicted import PredictionView, prediction_view, summary_sentences
from harness.report.narrative import Narrative, NarrativeInputs, build_narrative
from harness.report.plots import speculation_plot
from harness.report.recommendation import Recommendation, recommendation
from harness.report.reproducibility import GateView, Reproducibility, gate_view, reproducibility
from harness.report.reproduction import Reproduction, reproduction
from harness.report.rows import CellRow, DeploymentRow, PairRow, cell_row, deployment_rows, pair_rows
from harness.report.sections import Anchors, Section, number_sections
from harness.report.speculation_views import SpeculationView, speculation_view
from harness.store import Store, now_iso
from harness.verdict.judge_run import read_gate


@dataclass(frozen=True, slots=True)
class WhatRan:
    """What was asked (the matrix, its SLO and axes) and what ran: every cell in plan order, and its figures."""

    matrix: Matrix
    matrix_path: str
    generated_at: str
    runs_dir: Path
    server_configurations: int
    rows: tuple[CellRow, ...]
    """Every cell of the plan, in plan order."""
    measured: tuple[CellRow, ...]
    failed: tuple[CellRow, ...]
    not_run: tuple[CellRow, ...]
    without_figures: tuple[CellRow, ...]
    """Cells with no summary (failed or not run): no point on any frontier."""
    slo_bounds: tuple[str, ...]
    """Each bound the SLO sets, written out (``ttft_p99_ms`` ≤ 500.0 ms)."""
    slo: tuple[tuple[str, float], ...]
    """Each bound the SLO sets: its name and value in ms."""
    slo_note: str
    axes: tuple[tuple[str, str], ...]
    """Each axis the matrix sets, with its values written out."""
    metrics: tuple[Metric, ...]
    pairs: tuple[PairRow, ...]
    """Speculative cells beside their ``off`` twins."""
    break_even: tuple[BreakEven, ...]
    speculation_plot: str | None
    deployments: tuple[DeploymentRow, ...] = ()
    """Replicated and disaggregated cells beside their colocated twins."""


@dataclass(frozen=True, slots=True)
class NoiseTally:
    """How many of the report's comparisons clear the launch noise, and which headline ones do not."""

    comparisons: int
    """Runner-up margins, cost levers and matched-interactivity comparisons, counted alike."""
    conclusive: int
    ties: int
    """Comparisons whose interval holds no difference (levers whose pairs disagree included)."""
    unknown: int
    """Comparisons with one launch on each side: no interval at all."""
    open_headlines: tuple[str, ...]
    """Each runner-up margin that is not a finding (``m · w — tie (inside the launch noise)``)."""

    @property
    def all_unknown(self) -> bool:
        return self.comparisons > 0 and self.unknown == self.comparisons


def noise_tally(recommendations: Sequence[Recommendation], levers: Sequence[Lever],
                comparisons: Sequence[Comparison]) -> NoiseTally:
    """Count every comparison the report makes by where it stands against the launch noise."""
    margins = [m for r in recommendations if (m := r.runner_up_margin) is not None]
    margins += [m for c in comparisons if (m := c.margin) is not None]
    # one word per comparison: lead, tie (a lever whose pairs disagree is no lead either) or unknown
    standings = ["lead" if m.conclusive else m.call for m in margins]
    standings += ["lead" if lever.call in ("cheaper", "dearer") else "tie" if lever.call in ("tie", "mixed")
                  else "unknown" for lever in levers]
    open_headlines = tuple(f"{r.model} · {r.workload} — {m.standing}" for r in recommendations
                           if (m := r.runner_up_margin) is not None and not m.conclusive)
    return NoiseTally(comparisons=len(standings), conclusive=standings.count("lead"), ties=standings.count("tie"),
                      unknown=standings.count("unknown"), open_headlines=open_headlines)


@dataclass(frozen=True, slots=True)
class ReportContext:
    """Everything ``report.md`` shows; the templates receive its fields by name and only format them."""

    sections: Mapping[str, Section]
    """Every top-level section by key, numbered: the templates' headings and cross-references."""
    anchors: Anchors
    """The ids of the appendix tables the narrative's numbers link to."""
    narrative: Narrative
    """What the opening pages state: each decision's defence, the two figures, the risks."""
    ran: WhatRan
    cost: CostAndFrontiers
    recommendations: tuple[Recommendation, ...]
    """One per (model, workload), in plan order."""
    evidence: Evidence
    gate: GateView
    repro: Reproducibility
    reproduction: Reproduction
    """This run beside an earlier run of the matrix on this machine kind, from the results history: no verdict."""
    not_measured: tuple[str, ...]
    """What this report cannot show, one statement each; the counted gaps (cells not run, figures inconclusive,
    comparisons inside the noise) the narrative states from their own fields, each count linked."""
    noise: NoiseTally
    """Which comparisons clear the launch noise; the verdict says which headline ones do not."""
    shapes: LoadShapes
    """Agent sessions turn by turn, trace replays, and SLO searches."""
    speculation: SpeculationView
    """Per-request acceptance, each speculative series' crossover, and the best draft depth per concurrency."""
    prediction: PredictionView
    """Measured ÷ predicted per cell, from the predictions the run made before launching."""
    prediction_summary: str
    """The narrative's two sentences on how good the prediction was."""
    experts: ExpertLoadView
    """Each MoE cell's expert load, its heatmaps, and how far its workloads route apart."""


def _axes(matrix: Matrix) -> tuple[tuple[str, str], ...]:
    return tuple((axis, ", ".join(str(v) if isinstance(v, str | int | float) else v.label for v in values))
                 for axis, values in matrix.axes if values is not None)


def what_ran(plan: Plan, store: Store, priced: Sequence[PricedCell], rows: Mapping[str, CellRow],
             matrix_path: str | None) -> WhatRan:
    matrix = plan.matrix
    in_order = tuple(rows.values())
    pairs = speculation_pairs(priced)
    return WhatRan(
        matrix=matrix, matrix_path=matrix_path or f"matrices/{matrix.name}.yaml", generated_at=now_iso(),
        runs_dir=store.dir / "runs", server_configurations=len(plan.groups), rows=in_order,
        measured=tuple(rows[r.cell.cell_id] for r in priced if r.summary is not None),
        failed=tuple(r for r in in_order if r.result is not None and r.result.status == "failed"),
        not_run=tuple(r for r in in_order if r.result is None),
        without_figures=tuple(rows[r.cell.cell_id] for r in priced if r.summary is None),
        slo_bounds=tuple(f"`{name}` ≤ {fmt(value)} ms" for name, value in matrix.slo if value is not None),
        slo=tuple((name, value) for name, value in matrix.slo if value is not None),
        slo_note=SLO_QUANTILE_NOTE, axes=_axes(matrix), metrics=METRICS, pairs=pair_rows(pairs, rows),
        break_even=tuple(break_even(pairs)), speculation_plot=speculation_plot(pairs, store),
        deployments=deployment_rows(topology_pairs(priced), rows))


def _not_measured(cost: CostAndFrontiers, evidence: Evidence, gate: GateView,
                  sections: Mapping[str, Section]) -> tuple[str, ...]:
    found = []
    if evidence.parity_spec is None:
        found.append("Accuracy parity: the matrix has no parity section.")
    elif not evidence.parity_measured:
        found.append("Accuracy parity: asked for, but no cell has a stored result.")
    if not evidence.profiles:
        found.append("Profiles: none captured, so the split of decode time (MoE GEMMs, attention, communication) "
                     "is not shown.")
    if not cost.power_measured:
        found.append("Power: no NVML telemetry in this run; tok/s/MW uses the cost table's all-in watts where it has "
                     "them, and is not available otherwise.")
    if gate.result is None:
        found.append("Run-to-run drift: there is no committed baseline to compare with, so the gate did not run.")
    found += cost.lecture_not_measurable
    found.append(f"Prices and all-in power are inputs ({sections['cost'].ref}), not measured.")
    return tuple(found)


def build_context(plan: Plan, store: Store, matrix_path: str | None = None) -> ReportContext:
    """Gather the report from the stored results and verdicts of ``plan``; draws its figures into ``plots/``."""
    matrix = plan.matrix
    price = matrix_price(matrix)
    priced = price_cells(plan, store, price)
    rows = {r.cell.cell_id: cell_row(r) for r in priced}
    cost = cost_and_frontiers(priced, matrix, price, store)
    parity: dict[str, CellParity] = {c.cell_id: v for c in plan.cells
                                     if (v := find_cell_parity(store.parity_verdict_path(c))) is not None}
    ran = what_ran(plan, store, priced, rows, matrix_path)
    evidence = gather_evidence(plan, store, priced, parity_measured=bool(parity))
    verdict = read_gate(store)
    gate = gate_view(verdict, matrix.gates.history, trend_plot(verdict.history if verdict else None, store))
    repro = reproducibility(store, verdict)
    if repro is None:
        raise HarnessError(f"{store.run_lock_path}: no lock for this run; the report is rendered after the "
                           "verdicts (`harness gate` writes them)")
    sections = number_sections(price.unit)
    recommendations = tuple(recommendation(d, rows) for d in recommend(priced, matrix, cost.series, parity))
    noise = noise_tally(recommendations, cost.levers, cost.comparisons)
    dirty = tuple(name for name, lock in (("this run", repro.lock), ("the committed baseline", repro.committed_lock))
                  if lock is not None and lock.harness.dirty)
    shapes = load_shapes(plan, store, rows)
    prediction = prediction_view(rows, store)
    speculation = speculation_view(priced, speculation_pairs(priced), store)
    narrative = build_narrative(NarrativeInputs(recommendations, priced, cost, evidence, ran.pairs, shapes.searches,
                                                dirty, speculation.crossovers), matrix, store)
    return ReportContext(
        sections=sections, anchors=Anchors(), narrative=narrative, ran=ran, cost=cost,
        recommendations=recommendations, evidence=evidence, gate=gate, repro=repro,
        reproduction=reproduction(plan, store, repro.lock, ran.matrix_path),
        not_measured=_not_measured(cost, evidence, gate, sections), noise=noise, shapes=shapes,
        speculation=speculation, prediction=prediction, prediction_summary=summary_sentences(prediction),
        experts=expert_load_view(plan, store))

