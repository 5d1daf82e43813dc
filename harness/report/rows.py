"""The rows of the report's tables, precomputed: every figure a table shows, ``None`` where the cell has none.

A stored cell may have failed, not run, or been measured by a server that does not report a figure (no
speculation counters, no Prometheus histograms). The guards that decide this live here, once, so a template
only formats: ``{{ row.ttft.p99 | fmt }}`` shows ``–`` for an absent figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.analysis.cost import PricedCell
from harness.analysis.frontier import Series
from harness.analysis.speculation_effect import SpeculationPair
from harness.analysis.topology_effect import TopologyPair
from harness.metrics.cell_summary import CellSummary, LatencyStats
from harness.plan.cells import Cell
from harness.report.formatting import MISSING
from harness.result_records import CellResult


@dataclass(frozen=True, slots=True)
class Latency:
    """One per-request latency of a cell as the tables show it (ms)."""

    median: float | None = None
    p99: float | None = None


def _latency(stats: LatencyStats | None) -> Latency:
    return Latency() if stats is None else Latency(stats.median, stats.p99)


@dataclass(frozen=True, slots=True)
class CellRow:
    """One cell of the plan, with what it measured and what that costs; the same row feeds every table."""

    cell: Cell
    status: str
    """``ok``, ``failed`` or ``not run``."""
    result: CellResult | None
    """The stored result (a failed cell's reason and log tail); None when the cell has not run."""
    # what the client measured (None unless the cell ran to the end)
    ttft: Latency
    tpot: Latency
    itl: Latency
    e2el: Latency
    output_throughput: float | None
    total_throughput: float | None
    request_throughput: float | None
    goodput: float | None
    errors: int | None
    interactivity: float | None
    acceptance_rate: float | None
    acceptance_length: float | None
    per_position: tuple[float, ...] | None
    # what it costs, with the replica's price (an input)
    tok_s_per_device: float | None
    usd_per_mtok_output: float | None
    usd_per_mtok_total: float | None
    tok_s_per_mw: float | None
    power_source: str
    """Where the watts behind tok/s/MW come from: measured (NVML), the table, or not available."""
    prefix_cache_hit_rate: float | None = None
    """The server's prefix-cache hits over queried tokens during the cell (its counters' deltas)."""


def cell_row(priced: PricedCell) -> CellRow:
    s, c = priced.summary, priced.cost
    spec = s.speculation if s is not None else None
    return CellRow(
        cell=priced.cell, status=priced.status, result=priced.result,
        ttft=_latency(s.ttft_ms if s else None), tpot=_latency(s.tpot_ms if s else None),
        itl=_latency(s.itl_ms if s else None), e2el=_latency(s.e2el_ms if s else None),
        output_throughput=s.output_throughput if s else None,
        total_throughput=s.total_token_throughput if s else None,
        request_throughput=s.request_throughput if s else None, goodput=s.goodput if s else None,
        errors=s.failed if s else None, interactivity=s.interactivity if s else None,
        acceptance_rate=spec.acceptance_rate if spec else None,
        acceptance_length=spec.acceptance_length if spec else None,
        per_position=spec.per_position if spec else None,
        tok_s_per_device=c.tok_s_per_device if c else None, usd_per_mtok_output=c.usd_per_mtok_output if c else None,
        usd_per_mtok_total=c.usd_per_mtok_total if c else None, tok_s_per_mw=c.tok_s_per_mw if c else None,
        power_source=c.power_source if c else MISSING,
        prefix_cache_hit_rate=s.server.prefix_cache.hit_rate if s and s.server and s.server.prefix_cache else None)


@dataclass(frozen=True, slots=True)
class PairRow:
    """A speculative cell beside its ``off`` twin (same everything else)."""

    speculative: CellRow
    off: CellRow
    tpot_speedup: float | None
    throughput_ratio: float | None


def pair_rows(pairs: Iterable[SpeculationPair], rows: Mapping[str, CellRow]) -> tuple[PairRow, ...]:
    """``rows`` by cell id: each pair's cells as the throughput table already shows them."""
    return tuple(PairRow(rows[p.speculative.cell.cell_id], rows[p.off.cell.cell_id], p.tpot_speedup,
                         p.throughput_ratio) for p in pairs)


@dataclass(frozen=True, slots=True)
class DeploymentRow:
    """A replicated or disaggregated cell beside its colocated twin."""

    deployed: CellRow
    colocated: CellRow
    topology: str
    policy: str
    devices: int | None
    tok_s_per_device: tuple[float | None, float | None]
    split: tuple[float, float] | None
    kv_transfer_ms: float | None
    noise: str


def deployment_rows(pairs: Iterable[TopologyPair], rows: Mapping[str, CellRow]) -> tuple[DeploymentRow, ...]:
    out = []
    for p in pairs:
        server = p.deployed.cell.server
        m = p.margin
        out.append(DeploymentRow(rows[p.deployed.cell.cell_id], rows[p.colocated.cell.cell_id], server.topology.label,
                                 getattr(server.topology.root, "policy", "round_robin"), p.devices,
                                 p.tok_s_per_device, p.split, p.kv_transfer_ms,
                                 m.describe("out tok/s") if m is not None else "no figures"))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class FrontierRow:
    """One measured point of a recipe's series, and whether it is on that recipe's frontier."""

    model: str
    workload: str
    recipe: str
    concurrency: int
    interactivity: float
    tok_s_per_device: float
    on_frontier: bool


def frontier_rows(series: Sequence[Series]) -> tuple[FrontierRow, ...]:
    """Every series' points, each series left to right in interactivity."""
    return tuple(FrontierRow(s.model, s.workload, s.name, p.concurrency, p.interactivity, p.tok_s_per_device,
                             p in s.frontier)
                 for s in series for p in sorted(s.points, key=lambda p: p.interactivity))


@dataclass(frozen=True, slots=True)
class FidelityRow:
    """How far one measured cell's figures can be trusted: the client's load and the server's own view."""

    label: str
    cpu_util: float | None
    loop_lag_p99_ms: float | None
    ttft_client_ms: float | None
    """The client's mean TTFT (exact)."""
    ttft_server_ms: float | None
    """The server histogram's sum over its count: exact too, where a quantile would read a bucket edge."""
    tpot_client_ms: float | None
    tpot_server_ms: float | None
    """Means, like TTFT's: vLLM's TPOT buckets are 2.5 ms apart at this scale, so a histogram median of a 1.8-8.4 ms
    cell lands on the 5.00 ms edge."""
    itl_client_over_server: float | None
    """The client's exact mean inter-token gap over the server's (unbucketed) mean: near 1 when they agree."""
    prefix_cache_hit_rate: float | None
    repeats: int
    throughput_mad: float | None
    """Relative MAD of output tok/s across repeats (None with one repeat)."""
    tpot_mad: float | None


def fidelity_row(label: str, s: CellSummary) -> FidelityRow:
    srv = s.server
    server_itl = srv.itl_ms if srv else None
    spread = {name: v.relative_mad for name, v in s.spread.items()}
    return FidelityRow(
        label=label, cpu_util=s.client.cpu_util if s.client else None,
        loop_lag_p99_ms=s.client.loop_lag_p99_ms if s.client else None,
        ttft_client_ms=s.ttft_ms.mean if s.ttft_ms else None,
        ttft_server_ms=srv.ttft_ms.mean if srv and srv.ttft_ms else None,
        tpot_client_ms=s.tpot_ms.mean if s.tpot_ms else None,
        tpot_server_ms=srv.tpot_ms.mean if srv and srv.tpot_ms else None,
        itl_client_over_server=s.itl_ms.mean / server_itl.mean if s.itl_ms and server_itl and server_itl.mean
        else None,
        prefix_cache_hit_rate=srv.prefix_cache.hit_rate if srv and srv.prefix_cache else None,
        repeats=max(1, len(s.repeats)), throughput_mad=spread.get("output_throughput"),
        tpot_mad=spread.get("tpot_ms.median"))
