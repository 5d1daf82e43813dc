"""Builders of stored cell results with chosen figures, for the analysis stages' tests (no server, no records)."""

from __future__ import annotations

from harness.metrics.cell_summary import CellSummary, LatencyStats
from harness.parity import CellParity, write_cell_parity
from harness.plan import Cell
from harness.result_records import CellResult
from harness.servers.prometheus import SpeculationStats
from harness.store import Store, now_iso


def stats(median_ms: float, p99_ms: float | None = None, count: int = 32) -> LatencyStats:
    p99 = p99_ms if p99_ms is not None else median_ms * 1.2
    return LatencyStats(count=count, mean=median_ms, std=0.0, median=median_ms, p90=(median_ms + p99) / 2, p99=p99,
                        p99_9=p99)


def summary(out_tok_s: float, tpot_ms: float, ttft_ms: float = 50.0, *, failed: int = 0,
            acceptance_rate: float | None = None) -> CellSummary:
    spec = None
    if acceptance_rate is not None:
        spec = SpeculationStats(drafts=100, draft_tokens=100, accepted_tokens=int(acceptance_rate * 100),
                               acceptance_rate=acceptance_rate, acceptance_length=1 + acceptance_rate,
                               per_position=(acceptance_rate,))
    return CellSummary(
        requests=32, completed=32 - failed, failed=failed, warmup_excluded=2, error_rate=failed / 32,
        error_kinds={"http_500": failed} if failed else {}, duration_s=10.0, total_input_tokens=4096,
        total_output_tokens=int(out_tok_s * 10), ttft_ms=stats(ttft_ms), tpot_ms=stats(tpot_ms),
        itl_ms=stats(tpot_ms), e2el_ms=stats(ttft_ms + 63 * tpot_ms), request_throughput=3.2,
        output_throughput=out_tok_s, total_token_throughput=out_tok_s + 409.6, goodput=None,
        interactivity=1000.0 / tpot_ms, speculation=spec)


def store_ok(store: Store, cell: Cell, cell_summary: CellSummary) -> None:
    store.write_result(cell, CellResult(cell_id=cell.cell_id, label=cell.label, server_id=cell.server.server_id,
                                        status="ok", started_at=now_iso(), finished_at=now_iso(),
                                        summary=cell_summary))


def store_failed(store: Store, cell: Cell, reason: str = "server exited while the cell ran") -> None:
    store.write_result(cell, CellResult(cell_id=cell.cell_id, label=cell.label, server_id=cell.server.server_id,
                                        status="failed", reason=reason, log_tail="Killed", started_at=now_iso(),
                                        finished_at=now_iso()))


def store_parity(store: Store, cell: Cell, *, passed: bool, delta_pp: float) -> None:
    """A parity verdict for ``cell`` with only its headline (no per-decoding comparisons behind it)."""
    verdict = CellParity(passed=passed, delta_pp=delta_pp, overall_accuracy=None, decoding=None, rule="test",
                         reason="stored by the test", comparisons={})
    write_cell_parity(verdict, store.parity_verdict_path(cell))


def store_launches(store: Store, cell: Cell, launches: list[CellSummary],
                   machine_s: tuple[float | None, ...] | None = None) -> None:
    """A cell measured on several server launches, pooled as the pipeline pools them."""
    from harness.metrics.repeats import combine_launches

    store.write_result(cell, CellResult(cell_id=cell.cell_id, label=cell.label, server_id=cell.server.server_id,
                                        status="ok", started_at=now_iso(), finished_at=now_iso(),
                                        summary=combine_launches(launches),
                                        machine_s=machine_s if machine_s is not None else (None,) * len(launches)))
