"""The report's expert-load section: for every cell the engine counted, its imbalance and the tokens counted against
the tokens its requests should have routed; one heatmap (layers × experts, each layer's share per expert) per
server and workload; and how far each pair of workloads on one server routes apart, against the noise of routing
the same workload twice."""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from dataclasses import dataclass

from harness.analysis.expert_balance import (
    EngineDistance,
    WorkloadDistance,
    engine_distances,
    layer_balance,
    pool_counts,
    workload_distances,
)
from harness.plan import Plan
from harness.report.plots import png
from harness.servers import get_runtime
from harness.servers.expert_load_collectors import ExpertCounts, LoggedBalance
from harness.store import Store
from harness.telemetry import ExpertLoadRecord, read_expert_load

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ExpertCellRow:
    """One cell's counts, pooled over its launches."""

    label: str
    collector: str
    layers: int
    experts: int
    rows: int
    """Rows routed through each layer (the first layer's; all layers route the same rows)."""
    expected: int
    worst_layer: int
    worst_max_over_mean: float
    mean_cv: float
    hottest_share: float
    overhead: float | None
    """The collector's hook time over the measured wall time (None where the engine does not time it)."""


@dataclass(frozen=True, slots=True)
class ExpertLoadView:
    asked: bool
    """The matrix turned ``telemetry.expert_load`` on."""
    rows: tuple[ExpertCellRow, ...]
    missing: tuple[tuple[str, str], ...]
    """Cells with no counts, and why."""
    heatmaps: tuple[tuple[str, str], ...]
    """(caption, path relative to the report) per server and workload."""
    distances: tuple[WorkloadDistance, ...]
    engines: tuple[EngineDistance, ...]
    """Two engines on the same requests (the same model, precision, speculation, workload and concurrency)."""
    logged: tuple[tuple[str, LoggedBalance], ...] = ()
    """What an engine's own load balancer logged over a cell (vLLM's EPLB on a GPU): per EP rank, not per expert."""


def _cell_row(label: str, records: list[ExpertLoadRecord]) -> ExpertCellRow | None:
    counted = [r.counts for r in records if r.counts is not None]
    counts = pool_counts(counted)
    balance = layer_balance(counts) if counts is not None else []
    if counts is None or not balance:
        return None
    worst = max(balance, key=lambda b: b.max_over_mean)
    hooks = [r.counts.hook_seconds for r in records if r.counts is not None]
    measured = sum(r.measured_s for r in records)
    overhead = sum(h for h in hooks if h is not None) / measured if None not in hooks and measured > 0 else None
    return ExpertCellRow(label=label, collector=counts.collector, layers=len(counts.layers), experts=counts.experts,
                         rows=counts.rows[0], expected=sum(r.expected_rows for r in records),
                         worst_layer=worst.layer, worst_max_over_mean=worst.max_over_mean,
                         mean_cv=sum(b.cv for b in balance) / len(balance),
                         hottest_share=max(b.hottest_share for b in balance), overhead=overhead)


def _heatmap(counts: ExpertCounts, title: str, store: Store) -> str | None:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"experts-{title}") + ".png"
    path = store.plots_dir / name
    shares = [[c / max(sum(row), 1) for c in row] for row in counts.counts]
    try:
        with png(path, figsize=(min(3.0 + 0.45 * counts.experts, 12.0), 2.4 + 0.3 * len(counts.layers))) as ax:
            image = ax.imshow(shares, aspect="auto", cmap="viridis", vmin=0.0)
            ax.set_yticks(range(len(counts.layers)), [str(layer) for layer in counts.layers], fontsize=7)
            ax.set_xticks(range(counts.experts), [str(e) for e in range(counts.experts)], fontsize=6)
            ax.set_xlabel("expert", fontsize=8)
            ax.set_ylabel("layer", fontsize=8)
            ax.set_title(title, fontsize=8)
            bar = ax.figure.colorbar(image, ax=ax)
            bar.set_label("share of the layer's tokens", fontsize=7)
            bar.ax.tick_params(labelsize=6)
    except ImportError:
        log.warning("matplotlib is not installed: the expert-load heatmaps are skipped (the table is in the report)")
        return None
    return f"plots/{name}"


def expert_load_view(plan: Plan, store: Store) -> ExpertLoadView:
    """Read every cell's stored counts and draw the heatmaps; empty when the matrix did not ask for them."""
    if not plan.matrix.telemetry.expert_load:
        return ExpertLoadView(False, (), (), (), (), ())
    rows, missing, logged = [], [], []
    per_workload: dict[str, dict[str, list[ExpertCounts]]] = defaultdict(lambda: defaultdict(list))
    same_requests: dict[tuple[str, str], dict[str, ExpertCounts]] = defaultdict(dict)
    within: dict[tuple[str, str], list[ExpertCounts]] = defaultdict(list)
    for cell in plan.cells:
        collector = get_runtime(cell.server.runtime).expert_load
        log = "".join(p.read_text(errors="replace") for p in store.cell_logs(cell)) if collector else ""
        if collector is not None and (balance := collector.logged_balance(log)) is not None:
            logged.append((cell.label, balance))
        records = [r for p in store.expert_load_paths(cell) if (r := read_expert_load(p)) is not None]
        row = _cell_row(cell.label, records)
        if row is None:
            reasons = {r.reason for r in records if r.reason}
            if records or store.read_result(cell) is not None:
                missing.append((cell.label, "; ".join(sorted(reasons)) or "the engine counted no MoE layer"))
            continue
        rows.append(row)
        cell_counts = pool_counts([r.counts for r in records if r.counts is not None])
        if cell_counts is not None:
            per_workload[cell.server.label][cell.workload_name].append(cell_counts)
            config = cell.server
            kind = " ".join((config.model_name, config.precision.label, config.parallel.label,
                             config.speculation.label, cell.workload_name))
            # the same prompts: the same workload, concurrency and request count (a cell raised by more_requests
            # or claims sends more of them, and is not the same sample)
            sent = cell.workload.requests_for(cell.concurrency)
            same_requests[f"{kind} c{cell.concurrency} ({sent} requests)", kind][config.runtime] = cell_counts
            within[config.runtime, kind].append(cell_counts)
    heatmaps, distances = [], []
    for server, workloads in per_workload.items():
        for workload, cells in workloads.items():
            pooled = pool_counts(cells)
            path = _heatmap(pooled, f"{server} · {workload}", store) if pooled is not None else None
            if path is not None:
                heatmaps.append((f"{server}, workload {workload} ({len(cells)} cell(s) pooled)", path))
        distances += workload_distances(server, workloads)
    engines = engine_distances({k: v for k, v in same_requests.items() if len(v) > 1}, within)
    return ExpertLoadView(True, tuple(rows), tuple(missing), tuple(heatmaps), tuple(distances), tuple(engines),
                          tuple(logged))
