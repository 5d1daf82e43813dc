"""An EP cell against its TP twin, group by group."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.profiling import ProfileTable, build_table, compare_twins, load_stats, render_comparison_md

DATA = Path(__file__).parent / "data" / "nsys"


def tables() -> tuple[ProfileTable, ProfileTable]:
    ep = build_table(load_stats(DATA / "ep8").kernel_entries(), "nsys")
    tp = build_table(load_stats(DATA / "tp8").kernel_entries(), "nsys")
    return ep, tp


def test_group_shares_side_by_side() -> None:
    ep, tp = tables()
    comparison = compare_twins(ep, tp, "EP8", "TP8")
    rows = {g.group: g for g in comparison.groups}
    assert comparison.comparable and comparison.note is None
    # EP: DeepEP's dispatch/combine all-to-all; TP: NCCL all-reduce and the custom all-reduce.
    assert rows["communication"].ep_share_pct == pytest.approx(30.7, abs=0.1)
    assert rows["communication"].tp_share_pct == pytest.approx(15.6, abs=0.1)
    assert rows["moe_gemm"].ep_share_pct < rows["moe_gemm"].tp_share_pct
    for row in comparison.groups:
        assert row.delta_pp == pytest.approx(row.ep_share_pct - row.tp_share_pct)
    md = render_comparison_md(comparison)
    assert md.splitlines()[0] == "| group | EP8 share | TP8 share | Δ (pp) | EP8 ms | TP8 ms |"
    assert "| communication | 30.7% | 15.6% | +15.1 |" in md


def test_different_bases_are_flagged() -> None:
    ep, _ = tables()
    cpu = build_table([("_C::cpu_fused_moe", 1e6, 1)], "torch_cpu")
    comparison = compare_twins(ep, cpu)
    assert not comparison.comparable
    assert "Not comparable as is" in render_comparison_md(comparison)
