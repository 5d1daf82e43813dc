"""The report renders stored results: measured rows, failures with reasons, speculative cells beside `off`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.config import load_matrix
from harness.load.records import RequestRecord
from harness.metrics import summarize
from harness.plan import Cell, expand
from harness.report import render_report
from harness.server_metrics import SpecDecodeStats
from harness.store import CellResult, Store, now_iso
from tests.conftest import BASE_MATRIX


def records(itl_s: float, n: int = 4, tokens: int = 8) -> list[RequestRecord]:
    chunks = tuple(0.05 + itl_s * i for i in range(tokens))
    return [RequestRecord(index=i, warmup=False, input_tokens=16, max_tokens=tokens, send_time=i * 0.1,
                          end_time=i * 0.1 + chunks[-1], chunk_times=chunks, chunk_tokens=(1,) * tokens,
                          output_tokens=tokens) for i in range(n)]


def ok(cell: Cell, itl_s: float, spec: SpecDecodeStats | None = None) -> CellResult:
    summary = summarize(records(itl_s), duration_s=1.0, spec=spec)
    return CellResult(cell_id=cell.cell_id, label=cell.label, server_id=cell.server.server_id, status="ok",
                      started_at=now_iso(), finished_at=now_iso(), summary=summary)


def test_report_pairs_speculation_with_off(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX + "  speculation: [off, mtp]\n")))
    store = Store(tmp_path, plan.matrix.name)
    by_label = {c.label: c for c in plan.cells}
    spec = SpecDecodeStats(drafts=100, draft_tokens=100, accepted_tokens=40, acceptance_rate=0.4,
                           acceptance_length=1.4, per_position=(0.4,))
    store.write_result(by_label["m/vllm/bf16/tp1/off/w/c1"], ok(by_label["m/vllm/bf16/tp1/off/w/c1"], 0.010))
    store.write_result(by_label["m/vllm/bf16/tp1/mtp1/w/c1"],
                       ok(by_label["m/vllm/bf16/tp1/mtp1/w/c1"], 0.020, spec))
    failed = by_label["m/vllm/bf16/tp1/off/w/c2"]
    store.write_result(failed, CellResult(cell_id=failed.cell_id, label=failed.label,
                                          server_id=failed.server.server_id, status="failed",
                                          reason="server exited while the cell ran", log_tail="Killed",
                                          started_at=now_iso(), finished_at=now_iso()))
    text = render_report(plan, store).read_text()
    assert "2 measured, 1 failed, 1 not run" in text
    # mtp decodes at twice the ITL of off here, so its TPOT speedup is 0.5x
    pair_row = next(line for line in text.splitlines() if line.startswith("| m | bf16 | mtp1 | 1 |"))
    assert "| 0.50× |" in pair_row and "| 0.400 | 1.40 | 0.400 |" in pair_row
    assert "### m/vllm/bf16/tp1/off/w/c2" in text and "server exited while the cell ran" in text
    assert "- m/vllm/bf16/tp1/mtp1/w/c2" in text  # not run yet
    assert "| `tpot_ms` | ms | lower |" in text
