"""The one profile table: names merged, ranked, grouped, shares of the summed time."""

from __future__ import annotations

import pytest

from harness.profiling import build_table


def test_entries_merge_by_name_and_rank_by_time() -> None:
    table = build_table([("fused_moe_kernel", 6e6, 10), ("flash_fwd_kernel", 3e6, 5), ("fused_moe_kernel", 2e6, 2),
                         ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 1e6, 4), ("rms_norm_kernel", 0.0, 3)],
                        "nsys", top_n=2)
    assert table.total_ms == pytest.approx(12.0)
    assert table.distinct_kernels == 4
    assert [(r.name, r.total_ms, r.calls, r.group) for r in table.top] == [
        ("fused_moe_kernel", 8.0, 12, "moe_gemm"), ("flash_fwd_kernel", 3.0, 5, "attention")]
    assert table.top[0].share_pct == pytest.approx(200 / 3)
    shares = {g.group: (g.share_pct, g.calls, g.kernels) for g in table.groups}
    assert shares == {"moe_gemm": (pytest.approx(200 / 3), 12, 1), "attention": (25.0, 5, 1),
                      "communication": (pytest.approx(100 / 12), 4, 1), "other": (0.0, 3, 1)}
    assert "GPU kernel time" in table.basis


def test_an_empty_window_is_all_zero_not_an_error() -> None:
    table = build_table([], "torch_cpu")
    assert table.total_ms == 0 and table.top == ()
    assert [g.share_pct for g in table.groups] == [0.0, 0.0, 0.0, 0.0]
