"""The predicted capstone: a matrix answered by its predictor alone, for hardware nobody has here.

The same questions as a measured report (the ship recipe per model and workload, its $/MTok, the frontier of
tok/s per GPU against tok/s per user, the cost levers beside the capstone lecture's claimed ranges), every figure
a prediction with its predictor, data version and assumptions stated before any number. Nothing here was measured.

The SLO is read against predicted figures: TTFT against ``ttft_p99_ms`` (a model predicts a typical TTFT, not its
tail: stated in the report), TPOT against ``tpot_p50_ms``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.analysis.cost import ReplicaPrice, load_price_table, replica_price, usd_per_mtok
from harness.analysis.cost_levers import CLAIM_KEY, LECTURE_CLAIMS, LEVER_AXES, LectureClaim
from harness.plan.cells import Cell, Plan
from harness.predict import PlanPredictions, Prediction, stated_assumptions
from harness.store import write_atomic


@dataclass(frozen=True, slots=True)
class PredictedCell:
    cell: Cell
    prediction: Prediction
    devices: int
    usd_per_mtok: float | None
    meets_slo: bool

    @property
    def tok_s_per_device(self) -> float:
        found = self.prediction.output_tok_s_per_gpu
        return found if found is not None else self.prediction.output_tok_s / self.devices


@dataclass(frozen=True, slots=True)
class PredictedLever:
    claim: LectureClaim
    pairs: int
    median_pct: float
    low_pct: float
    high_pct: float

    @property
    def against_claim(self) -> str:
        if self.low_pct >= self.claim.lo_pct and self.high_pct <= self.claim.hi_pct:
            return "inside the claimed range"
        if self.high_pct < self.claim.lo_pct or self.low_pct > self.claim.hi_pct:
            return "outside the claimed range"
        return "partly inside the claimed range"


@dataclass(frozen=True, slots=True)
class PredictedReport:
    plan: Plan
    price: ReplicaPrice
    cells: tuple[PredictedCell, ...]
    declined: tuple[tuple[Cell, str], ...]
    ships: tuple[tuple[str, str, PredictedCell | None], ...]
    """Per model and workload: the cheapest predicted cell meeting the SLO (None: no cell does)."""
    frontiers: tuple[tuple[str, str, tuple[PredictedCell, ...]], ...]
    levers: tuple[PredictedLever, ...]
    assumptions: tuple[tuple[str, str, str], ...]
    versions: tuple[str, ...]


def _meets(prediction: Prediction, plan: Plan) -> bool:
    slo = plan.matrix.slo
    return ((slo.ttft_p99_ms is None or prediction.ttft_ms <= slo.ttft_p99_ms)
            and (slo.tpot_p50_ms is None or prediction.tpot_ms <= slo.tpot_p50_ms))


def _pareto(cells: Sequence[PredictedCell]) -> tuple[PredictedCell, ...]:
    """The cells no other beats on both tok/s per user and tok/s per device, by tok/s per user."""
    ranked = sorted(cells, key=lambda c: (-c.prediction.tok_s_user, -c.tok_s_per_device))
    front: list[PredictedCell] = []
    for cell in ranked:
        if not front or cell.tok_s_per_device > front[-1].tok_s_per_device:
            front.append(cell)
    return tuple(front)


def _identity(cell: Cell, axis: str) -> tuple[str, ...]:
    others = [a for a in ("model", "workload", *LEVER_AXES) if a != axis]
    return tuple(str(getattr(cell.axis_value(a), "label", cell.axis_value(a))) for a in others)


SUBSTITUTED = {"parallel": "moe layout"}
"""A lever's axis, and the assumption by which a predictor says it priced another value of that axis than the
cell's (AIConfigurator's P/D workers on a substituted MoE layout): such a pair says nothing of the lever."""


def _levers(cells: Sequence[PredictedCell]) -> tuple[PredictedLever, ...]:
    """Each of the lecture's claims over every pair of predicted cells that differ on its axis alone, neither
    predicted on a substituted value of that axis: the change in $/MTok (tok/s per device before / after - 1, so no
    price is needed)."""
    found = []
    for claim in LECTURE_CLAIMS:
        key = CLAIM_KEY[claim.axis]
        said = SUBSTITUTED.get(claim.axis)
        usable = [c for c in cells if said is None or said not in c.prediction.assumptions]
        before = {_identity(c.cell, claim.axis): c for c in usable if key(c.cell) == claim.before}
        changes = [100 * (b.tok_s_per_device / a.tok_s_per_device - 1) for a in usable if key(a.cell) == claim.after
                   if (b := before.get(_identity(a.cell, claim.axis))) is not None]
        if changes:
            found.append(PredictedLever(claim, len(changes), statistics.median(changes), min(changes), max(changes)))
    return tuple(found)


def predicted_report(plan: Plan, predictions: PlanPredictions, base_dir: Path | None = None) -> PredictedReport:
    price = replica_price(plan.matrix, load_price_table(plan.matrix.cost, base_dir or Path.cwd()))
    cells, declined = [], []
    for cell in plan.cells:
        prediction = predictions.prediction(cell.cell_id)
        if prediction is None:
            declined.append((cell, predictions.reason(cell.cell_id) or "not predicted"))
            continue
        server_price = price.for_server(cell.server)
        usd = server_price.usd_per_hour
        cells.append(PredictedCell(cell, prediction, server_price.devices,
                                   usd_per_mtok(usd, prediction.output_tok_s) if usd is not None else None,
                                   _meets(prediction, plan)))
    groups: dict[tuple[str, str], list[PredictedCell]] = {}
    for found in cells:
        groups.setdefault((found.cell.server.model_name, found.cell.workload_name), []).append(found)
    ships = []
    for (model, workload), members in groups.items():
        qualifying = [c for c in members if c.meets_slo and c.usd_per_mtok is not None]
        ships.append((model, workload, min(qualifying, key=lambda c: c.usd_per_mtok or 0.0) if qualifying else None))
    versions = sorted({f"{c.prediction.predictor} {c.prediction.predictor_version}"
                       + (f" ({c.prediction.data_version})" if c.prediction.data_version else "") for c in cells})
    return PredictedReport(plan=plan, price=price, cells=tuple(cells), declined=tuple(declined), ships=tuple(ships),
                           frontiers=tuple((m, w, _pareto(members)) for (m, w), members in groups.items()),
                           levers=_levers(cells), assumptions=stated_assumptions(c.prediction for c in cells),
                           versions=tuple(versions))


def write_predicted_report(report: PredictedReport, path: Path) -> Path:
    """Render the predicted capstone to ``path`` (``Store.predicted_report_path``)."""
    from harness.report.render import environment

    text = environment().get_template("predicted.md.j2").render(r=report, slo=report.plan.matrix.slo)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)
    return path
