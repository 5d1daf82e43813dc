"""What the explorer page shows, gathered from the report's context: every measured cell as a point on its panel's
frontier, with the text a reader sees on hovering it (its figures, its prediction, measured ÷ predicted); the
earlier runs of the same matrix on this machine from the results history, as overlays a menu switches between; and
each cell's latency distributions (``latency_cdfs``).

The frontier is the report's own (``harness.analysis.frontier`` through ``ReportContext.cost``): the same axes,
output tok/s per device (GPU, or CPU machine) against tok/s per user, and the same recipes. The predictions and
their ratios are the report's (``measured_vs_predicted``), made before the run launched. An earlier run's point is
its stored figures (the centre over its launches, as the history's series hold them), placed with this run's
device count for the cell. Nothing here judges or predicts again, and nothing here draws: ``explorer_page`` turns
this into figures.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.errors import HistoryError
from harness.history import DISABLED, RunInfo, opened, read_series, runs_of
from harness.report.context import ReportContext
from harness.report.formatting import fmt, times, usd
from harness.report.latency_cdfs import CellLatency, latencies, panel_name
from harness.report.measured_vs_predicted import FIGURES, PredictedRow
from harness.report.rows import CellRow
from harness.store import Store

log = logging.getLogger(__name__)

HISTORY_FIGURES = ("output_throughput", "interactivity")
"""The history's figures an earlier run's point is placed by."""
MAX_RUNS = 20
"""Earlier runs the menu offers at most, the newest first."""


@dataclass(frozen=True, slots=True)
class CellPoint:
    """One cell of one run on the frontier plane, with its hover text (HTML: Plotly's ``<br>`` and ``<b>``)."""

    cell_id: str
    label: str
    panel: str
    recipe: str
    """The frontier series' name (runtime/precision/speculation[/topology])."""
    interactivity: float
    """tok/s per user (1000 / median TPOT ms)."""
    tok_s_per_device: float
    on_frontier: bool
    hover: str


@dataclass(frozen=True, slots=True)
class RunOverlay:
    """An earlier run of the matrix on this machine: its points, and its name in the menu."""

    run_key: str
    name: str
    points: tuple[CellPoint, ...]


@dataclass(frozen=True, slots=True)
class ExplorerData:
    """Everything the explorer page draws."""

    matrix: str
    generated_at: str
    device_unit: str
    """What one device is: ``GPU`` or ``CPU machine``."""
    x_slo: float | None
    """The SLO's interactivity (1000 / its TPOT bound), drawn as a line; None when the SLO sets no TPOT bound."""
    panels: tuple[str, ...]
    """Each (model · workload) with a frontier point, in plan order."""
    points: tuple[CellPoint, ...]
    overlays: tuple[RunOverlay, ...]
    """The earlier runs, the newest first."""
    history: str
    """Where the overlays come from, or why there are none: one sentence for the page."""
    latency: tuple[CellLatency, ...]


def hover_text(row: CellRow, recipe: str, unit: str, predicted: PredictedRow | None, declined: str | None) -> str:
    """The cell's figures, its prediction and measured ÷ predicted (or why it has none), one line each."""
    lines = [f"<b>{html.escape(row.cell.label)}</b>",
             f"recipe {html.escape(recipe)} · concurrency {row.cell.concurrency}",
             f"{fmt(row.tok_s_per_device)} output tok/s per {unit} · {fmt(row.interactivity)} tok/s/user",
             f"TTFT {fmt(row.ttft.median)} ms median, {fmt(row.ttft.p99)} p99 · TPOT {fmt(row.tpot.median)} ms "
             f"median, {fmt(row.tpot.p99)} p99",
             f"{usd(row.usd_per_mtok_output)}/MTok output"]
    if predicted is not None:
        p = predicted.prediction
        lines.append(f"predicted ({html.escape(p.predictor)}): TTFT {fmt(p.ttft_ms)} ms · TPOT {fmt(p.tpot_ms)} ms · "
                     f"{fmt(p.output_tok_s)} output tok/s")
        lines.append("measured ÷ predicted: " + " · ".join(
            f"{name} {times(ratio)}" for (name, _), ratio in zip(FIGURES, predicted.ratios, strict=True)))
    elif declined is not None:
        lines.append(f"no prediction: {html.escape(declined)}")
    return "<br>".join(lines)


def frontier_points(context: ReportContext) -> tuple[CellPoint, ...]:
    """Every point of every frontier series of the report, in series order, with its hover text."""
    rows = {row.cell.label: row for row in context.ran.rows}
    predicted = {r.row.cell.cell_id: r for r in context.prediction.rows}
    declined = {row.cell.cell_id: reason for row, reason in context.prediction.declined}
    unit = context.cost.price.unit
    points = []
    for series in context.cost.series:
        for point in series.points:
            row = rows[point.label]
            cell_id = row.cell.cell_id
            points.append(CellPoint(
                cell_id=cell_id, label=point.label, panel=panel_name(row.cell), recipe=series.name,
                interactivity=point.interactivity, tok_s_per_device=point.tok_s_per_device,
                on_frontier=point in series.frontier,
                hover=hover_text(row, series.name, unit, predicted.get(cell_id), declined.get(cell_id))))
    return tuple(points)


def run_name(run: RunInfo) -> str:
    """How the menu names a run: when it started (UTC, to the minute) and its commit, else its key."""
    return f"{run.started_at[:16].replace('T', ' ')} · {(run.commit or run.run_key)[:8]}"


def _overlay(run: RunInfo, figures: Mapping[str, Mapping[str, float]], current: Mapping[str, CellPoint],
             devices: Mapping[str, int], unit: str) -> RunOverlay:
    points = []
    for cell_id, found in figures.items():
        now = current.get(cell_id)
        if now is None or not {"output_throughput", "interactivity"} <= found.keys():
            continue
        tok_s = found["output_throughput"] / devices[cell_id]
        ratio = tok_s / now.tok_s_per_device if now.tok_s_per_device else None
        hover = "<br>".join([f"<b>{html.escape(now.label)}</b>", f"run {html.escape(run_name(run))}",
                             f"{fmt(tok_s)} output tok/s per {unit} · {fmt(found['interactivity'])} tok/s/user",
                             f"that run ÷ this run: {times(ratio)} output tok/s per {unit}"])
        points.append(CellPoint(cell_id=cell_id, label=now.label, panel=now.panel, recipe=now.recipe,
                                interactivity=found["interactivity"], tok_s_per_device=tok_s, on_frontier=False,
                                hover=hover))
    return RunOverlay(run_key=run.run_key, name=run_name(run), points=tuple(points))


def earlier_runs(context: ReportContext, store: Store, points: Sequence[CellPoint]
                 ) -> tuple[tuple[RunOverlay, ...], str]:
    """The matrix's earlier runs on this machine from the results history, as overlays of this run's cells, and
    the sentence saying so; none (and why) when the history is off, cannot be read or holds no earlier run."""
    url = store.history_url
    matrix = context.ran.matrix.name
    if url == DISABLED:
        return (), "The results history is off for this run (--history none): there is no earlier run to overlay."
    machine = context.repro.lock.hardware.fingerprint
    stamp = store.read_run_stamp()
    current = {p.cell_id: p for p in points}
    try:
        with opened(url) as engine:
            runs = runs_of(engine, matrix, machine)
            series = read_series(engine, matrix, machine, HISTORY_FIGURES, list(current))
    except HistoryError as exc:
        log.warning("the explorer overlays no earlier run: %s", exc)
        return (), f"The results history could not be read ({str(exc).splitlines()[0]}): no earlier run is overlaid."
    earlier = [run for run in runs if stamp is None or run.run_key != stamp.run_id][::-1][:MAX_RUNS]
    figures: dict[str, dict[str, dict[str, float]]] = {}  # run -> cell -> figure -> its centre over launches
    for one in series:
        for point in one.points:
            figures.setdefault(point.run.run_key, {}).setdefault(one.cell_id, {})[one.metric] = point.center
    rows = {row.cell.cell_id: row.cell for row in context.ran.rows}
    devices = {cell_id: context.cost.price.for_server(rows[cell_id].server).devices for cell_id in current}
    unit = context.cost.price.unit
    # a run none of whose cells is in this plan (the matrix changed since) has nothing to overlay
    overlays = tuple(found for run in earlier
                     if (found := _overlay(run, figures.get(run.run_key, {}), current, devices, unit)).points)
    if not overlays:
        return (), (f"The results history holds no earlier run of {matrix} on this machine ({machine}) with a cell of "
                    "this plan: the menu has this run alone.")
    return overlays, (f"The results history holds {len(runs)} run(s) of {matrix} on this machine ({machine}); the "
                      f"menu overlays any of the {len(overlays)} newest earlier ones with a cell of this plan.")


def explorer_data(context: ReportContext, store: Store) -> ExplorerData:
    """The explorer's data for the run the report ``context`` was built from."""
    points = frontier_points(context)
    overlays, history = earlier_runs(context, store, points)
    return ExplorerData(
        matrix=context.ran.matrix.name, generated_at=context.ran.generated_at, device_unit=context.cost.price.unit,
        x_slo=context.cost.x_slo, panels=tuple(dict.fromkeys(p.panel for p in points)), points=points,
        overlays=overlays, history=history, latency=latencies(store, (row.cell for row in context.ran.measured)))
