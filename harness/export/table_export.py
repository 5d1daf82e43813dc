"""A run's measured cells as one table for notebooks: a row per cell and per launch, the columns the report's
throughput and cost tables show, written as CSV or Parquet.

A row is a cell's pooled figures (``launch`` empty) or one launch's own (``launch`` k, for a cell measured on
several). Latencies are the median and p99 in ms, throughput in tokens or requests per second; the cost columns
price the measured throughput with the matrix's price table (inputs, as in the report: ``harness.analysis.cost``),
and ``power_source`` says where the watts behind ``tok_s_per_mw`` come from. An empty cell of the table is a figure
the run did not measure.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from harness.analysis.cost import ReplicaPrice, load_price_table, measured_watts, price_cell, replica_price
from harness.config.matrix import Matrix
from harness.export.stored_cell import StoredCell
from harness.metrics.cell_summary import LatencyStats
from harness.store import write_atomic

TABLE_NAME = "cells"

TEXT, INTEGER, NUMBER = "string", "Int64", "Float64"
COLUMNS: dict[str, tuple[str, str]] = {
    "matrix": (TEXT, "the matrix's name"),
    "run_id": (TEXT, "the run's id (run.json)"),
    "cell_id": (TEXT, "the cell's id"),
    "label": (TEXT, "the cell's label"),
    "launch": (INTEGER, "the launch a row is; empty: the cell's figures, pooled over its launches"),
    "launches": (INTEGER, "server launches the row's figures pool"),
    "model": (TEXT, "the matrix's model name"),
    "runtime": (TEXT, "the engine"),
    "precision": (TEXT, "weights (and KV cache) precision"),
    "parallel": (TEXT, "tp, dp and ep"),
    "topology": (TEXT, "colocated, replicas or prefill/decode"),
    "speculation": (TEXT, "speculative decoding"),
    "workload": (TEXT, "the workload's name"),
    "concurrency": (INTEGER, "requests in flight at most"),
    "request_rate": (NUMBER, "requests per second asked for; empty: as fast as the concurrency allows"),
    "requests": (INTEGER, "measured requests (warm-up excluded)"),
    "completed": (INTEGER, "requests that completed"),
    "failed": (INTEGER, "requests that failed"),
    **{f"{figure}_ms_{stat}": (NUMBER, f"{figure.upper()} {'median' if stat == 'median' else 'p99'}, ms")
       for figure in ("ttft", "tpot", "itl", "e2el") for stat in ("median", "p99")},
    "output_tok_s": (NUMBER, "output tokens per second"),
    "total_tok_s": (NUMBER, "input + output tokens per second"),
    "request_per_s": (NUMBER, "completed requests per second"),
    "goodput_req_s": (NUMBER, "completed requests per second meeting the SLO's per-request bounds"),
    "interactivity_tok_s_user": (NUMBER, "1000 / median TPOT (ms)"),
    "accept_rate": (NUMBER, "speculative acceptance rate (accepted / drafted tokens)"),
    "accept_len": (NUMBER, "tokens per speculative verification step"),
    "prefix_cache_hit_rate": (NUMBER, "the server's prefix-cache hit tokens / queried tokens"),
    "tok_s_per_device": (NUMBER, "output tok/s per priced device"),
    "usd_per_mtok_output": (NUMBER, "$ per million output tokens (the price table's inputs)"),
    "usd_per_mtok_total": (NUMBER, "$ per million input + output tokens"),
    "tok_s_per_mw": (NUMBER, "output tok/s per MW"),
    "power_source": (TEXT, "where tok_s_per_mw's watts come from: measured (NVML), table, not available"),
}
"""Every column, in order: its type (pandas' nullable types, so an unmeasured figure is empty, never 0) and what it
holds."""


def _latency(prefix: str, stats: LatencyStats | None) -> dict[str, float | None]:
    return {f"{prefix}_median": stats.median if stats else None, f"{prefix}_p99": stats.p99 if stats else None}


def table_row(stored: StoredCell, price: ReplicaPrice) -> dict[str, object]:
    """One row: what the report's throughput and cost tables show for this cell or launch."""
    cell, s = stored.cell, stored.summary
    server = cell.server
    spec = s.speculation
    cost = price_cell(s, price.for_server(server), measured_watts(stored.telemetry))
    return {
        "matrix": stored.run.matrix, "run_id": stored.run.run_id, "cell_id": cell.cell_id, "label": cell.label,
        "launch": stored.launch, "launches": s.launches, "model": server.model_name, "runtime": server.runtime,
        "precision": server.precision.label, "parallel": server.parallel.label, "topology": server.topology.label,
        "speculation": server.speculation.label, "workload": cell.workload_name, "concurrency": cell.concurrency,
        "request_rate": cell.load.request_rate, "requests": s.requests, "completed": s.completed, "failed": s.failed,
        **_latency("ttft_ms", s.ttft_ms), **_latency("tpot_ms", s.tpot_ms), **_latency("itl_ms", s.itl_ms),
        **_latency("e2el_ms", s.e2el_ms),
        "output_tok_s": s.output_throughput, "total_tok_s": s.total_token_throughput,
        "request_per_s": s.request_throughput, "goodput_req_s": s.goodput, "interactivity_tok_s_user": s.interactivity,
        "accept_rate": spec.acceptance_rate if spec else None, "accept_len": spec.acceptance_length if spec else None,
        "prefix_cache_hit_rate": s.server.prefix_cache.hit_rate if s.server and s.server.prefix_cache else None,
        "tok_s_per_device": cost.tok_s_per_device, "usd_per_mtok_output": cost.usd_per_mtok_output,
        "usd_per_mtok_total": cost.usd_per_mtok_total, "tok_s_per_mw": cost.tok_s_per_mw,
        "power_source": cost.power_source,
    }


def cells_table(cells: Sequence[StoredCell], matrix: Matrix) -> pd.DataFrame:
    """A row per stored cell and launch, the columns of ``COLUMNS`` in that order and of their types."""
    price = replica_price(matrix, load_price_table(matrix.cost, Path.cwd()))
    frame = pd.DataFrame([table_row(stored, price) for stored in cells], columns=list(COLUMNS))
    return frame.astype({name: dtype for name, (dtype, _) in COLUMNS.items()})


def write_csv(cells: Sequence[StoredCell], matrix: Matrix, dest: Path) -> list[Path]:
    path = dest / f"{TABLE_NAME}.csv"
    write_atomic(path, cells_table(cells, matrix).to_csv(index=False))
    return [path]


def write_parquet(cells: Sequence[StoredCell], matrix: Matrix, dest: Path) -> list[Path]:
    path = dest / f"{TABLE_NAME}.parquet"
    buffer = io.BytesIO()
    cells_table(cells, matrix).to_parquet(buffer, index=False, engine="pyarrow")
    write_atomic(path, buffer.getvalue())
    return [path]
