"""Render a matrix's capstone report from what is on disk: plan + stored results in, ``report.md`` out.

The report is the engineer's defence of a ship recipe: verdict first, then what was asked (SLO, hardware,
matrix), the recommendation and why every other recipe lost, frontiers, $/MTok, the cost levers against the
seed's claims, throughput, parity, profiles, the regression gate, and the lock and exact commands to
reproduce it. It never shows a figure the run did not measure unless it is labelled as an input (a price, a
power figure, a seed's claim); a section with no data says so. The analysis is the stages' own: ``cost``,
``frontier``, ``levers``, ``recommend``, ``gate`` and ``lockfile``; this module gathers and renders them.
"""

from __future__ import annotations

import logging
import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.analysis.cost import SEED_EXAMPLE, load_price_table, price_cells, replica_price
from harness.analysis.cost_levers import SEED_CLAIMS, UNMEASURED_CLAIMS, measure_levers
from harness.analysis.frontier import MIN_OVERLAP, Series, build_series, compare_matched
from harness.analysis.recommend import SLO_QUANTILE_NOTE, recommend, slo_interactivity
from harness.analysis.speculation_effect import SpeculationPair, break_even, plot_name, speculation_pairs
from harness.crosscheck import read_crosscheck
from harness.metrics.summary import METRICS
from harness.parity import CellParity, find_cell_parity
from harness.plan.cells import Plan
from harness.profiling import engine_profiler, nsys_profile_argv
from harness.profiling.stage import profiled
from harness.report.plots import plot_panel, plot_speculation
from harness.servers.registry import launch_spec
from harness.store import Store, now_iso
from harness.telemetry import TelemetrySummary, read_telemetry
from harness.verdict.gate import GateResult, GateRow
from harness.verdict.lock import read_lock
from harness.verdict.stage import read_gate

log = logging.getLogger(__name__)
PROFILE_SUMMARY = "summary.md"


def fmt(value: float | int | None, digits: int = 1) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"


def usd(value: float | None) -> str:
    """Dollars with enough digits that small per-token costs stay readable."""
    if value is None:
        return "–"
    if value >= 1:
        return f"${value:,.2f}"
    return f"${value:.3f}" if value >= 0.01 else f"${value:.3g}"


def pct(value: float | None) -> str:
    return "–" if value is None else f"{value:+.0f}%"


def pct_plain(fraction: float | None) -> str:
    """A fraction as a percentage (0.634 -> 63.4%)."""
    return "–" if fraction is None else f"{fraction * 100:.1f}%"


def parity_by_server(plan: Plan, store: Store) -> list[tuple[str, CellParity]]:
    """Each judged server's parity (stored identically in every cell of the server), in plan order."""
    found = []
    for group in plan.groups:
        verdict = next((v for c in group.cells if (v := find_cell_parity(store.parity_verdict_path(c)))), None)
        if verdict is not None:
            found.append((group.server.label, verdict))
    return found


def gpu_capture_argv(plan: Plan) -> dict[str, str]:
    """For each profiled cell: the ``nsys profile`` command the same capture runs under on a GPU machine."""
    found = {}
    for cell in profiled(plan.matrix.profile, plan.cells):
        argv = [*launch_spec(cell.server, 8000).argv,
                *engine_profiler(cell.server.runtime).server_args("nsys", Path("profiles"))]
        found[cell.cell_id] = shlex.join(nsys_profile_argv(argv, Path("profiles") / plan.matrix.name / cell.cell_id
                                                           / "profile"))
    return found


def cell_telemetry(plan: Plan, store: Store) -> dict[str, TelemetrySummary]:
    """Each cell's stored telemetry (NVML, or the reason there is none), by cell label."""
    return {cell.label: found for cell in plan.cells if (found := read_telemetry(store.telemetry_path(cell)))}


@dataclass(frozen=True, slots=True)
class ProfileEntry:
    label: str
    path: Path
    files: tuple[str, ...]
    summary: str | None


def find_profiles(store: Store, plan: Plan) -> list[ProfileEntry]:
    """Profiles captured for this matrix's cells (``profiles/<matrix>/<cell_id>/``), with their summary if any."""
    found = []
    for cell in plan.cells:
        folder = store.profile_dir(cell)
        if folder.is_dir():
            summary = folder / PROFILE_SUMMARY
            found.append(ProfileEntry(cell.label, folder, tuple(sorted(p.name for p in folder.iterdir())),
                                      summary.read_text() if summary.is_file() else None))
    return found


def _plots(series: list[Series], store: Store, device_unit: str, x_slo: float | None) -> dict[tuple[str, str], str]:
    """One frontier PNG per (model, workload); a missing matplotlib leaves the tables, and the report says so."""
    panels = list(dict.fromkeys(s.panel for s in series))
    drawn: dict[tuple[str, str], str] = {}
    for model, workload in panels:
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"frontier-{model}-{workload}") + ".png"
        try:
            plot_panel([s for s in series if s.panel == (model, workload)], store.plots_dir / name,
                       title=f"{model} · {workload}", device_unit=device_unit, slo_interactivity=x_slo)
        except ImportError:
            log.warning("matplotlib is not installed: frontier plots skipped (tables are in the report)")
            return {}
        drawn[(model, workload)] = f"plots/{name}"
    return drawn


def _speculation_plot(pairs: list[SpeculationPair], store: Store) -> str | None:
    """Acceptance and speedup against concurrency; None when no series has two concurrencies to draw."""
    if not any(len({p.speculative.cell.concurrency for p in pairs if p.series == s}) > 1 for s in {p.series for p in pairs}):
        return None
    name = plot_name(store.dir.name)
    try:
        plot_speculation(pairs, store.plots_dir / name)
    except ImportError:
        log.warning("matplotlib is not installed: the speculation plot is skipped (the table is in the report)")
        return None
    return f"plots/{name}"


def _largest_moves(gate: GateResult | None, count: int = 10) -> list[GateRow]:
    moved = [r for r in gate.rows if r.change_pct and math.isfinite(r.change_pct)] if gate else []
    return sorted(moved, key=lambda r: -abs(r.change_pct or 0.0))[:count]


def build_context(plan: Plan, store: Store, matrix_path: str | None = None) -> dict[str, Any]:
    matrix = plan.matrix
    price = replica_price(matrix, load_price_table(matrix.cost, Path.cwd()))
    rows = price_cells(plan, store, price)
    series = build_series(rows)
    x_slo = slo_interactivity(matrix.slo)
    parity: dict[str, CellParity] = {c.cell_id: v for c in plan.cells
                                     if (v := find_cell_parity(store.parity_verdict_path(c))) is not None}
    verdict = read_gate(store)
    gate = verdict.result if verdict else None
    gate_source = (verdict.baseline if gate else verdict.error or "") if verdict else "the gate has not run"
    levers = measure_levers(rows, matrix)
    pairs = speculation_pairs(rows)
    unmeasured = {c.text: c for c in SEED_CLAIMS if c.text not in {lv.claim.text for lv in levers if lv.claim}}
    return {
        # what was asked and what ran
        "matrix": matrix, "matrix_path": matrix_path or f"matrices/{matrix.name}.yaml", "generated_at": now_iso(),
        "groups": plan.groups, "rows": rows, "measured": [r for r in rows if r.summary is not None],
        "failed": [r for r in rows if r.result is not None and r.result.status == "failed"],
        "not_run": [r for r in rows if r.result is None], "runs_dir": store.dir / "runs", "out_dir": store.dir.parent,
        "metrics": METRICS, "slo_note": SLO_QUANTILE_NOTE,
        "pairs": pairs, "break_even": break_even(pairs), "speculation_plot": _speculation_plot(pairs, store),
        "repeats_max": max((len(r.summary.repeats) for r in rows if r.summary is not None), default=0),
        "crosscheck": read_crosscheck(store), "crosscheck_path": store.crosscheck_path,
        # cost, frontiers, levers, the recommendation
        "price": price, "seed_example": SEED_EXAMPLE, "series": series, "x_slo": x_slo, "min_overlap": MIN_OVERLAP,
        "plots": _plots(series, store, price.unit, x_slo), "comparisons": compare_matched(series, matrix, x_slo),
        "levers": levers, "unmeasured_claims": list(unmeasured.values()), "seed_not_measurable": UNMEASURED_CLAIMS,
        "recommendations": recommend(rows, matrix, series, parity),
        "measured_power": any(r.cost is not None and r.cost.measured_watts is not None for r in rows),
        # evidence, gate, reproducibility
        "gpu_capture": gpu_capture_argv(plan), "telemetry": cell_telemetry(plan, store),
        "parity": parity, "parity_servers": parity_by_server(plan, store), "profiles": find_profiles(store, plan),
        "gate": gate, "gate_source": gate_source, "gate_moves": _largest_moves(gate),
        "lock": read_lock(store.run_lock_path), "committed_lock": read_lock(store.committed_lock_path),
        "lock_file": store.committed_lock_path, "drift": list(verdict.drift) if verdict else [],
    }
