"""An expert-parallel cell against its tensor-parallel twin: group time shares side by side.

The twin is the cell that differs only in its parallel layout (same model, precision, runtime, speculation and
concurrency); finding it is the caller's business (it knows the plan). This module only lines the two tables up,
so the report can show what EP moves: typically MoE GEMM time down per GPU and all-to-all communication up.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from harness.profiling.kernel_groups import GROUPS, KernelGroup
from harness.profiling.table import ProfileTable


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GroupComparison(_Frozen):
    group: KernelGroup
    label: str
    ep_share_pct: float
    tp_share_pct: float
    delta_pp: float
    ep_ms: float
    tp_ms: float


class TwinComparison(_Frozen):
    """Group shares of an EP cell and its TP twin; ``comparable`` is False when the bases differ."""

    ep_label: str
    tp_label: str
    comparable: bool
    note: str | None = None
    groups: tuple[GroupComparison, ...]


def compare_twins(ep: ProfileTable, tp: ProfileTable, ep_label: str = "EP", tp_label: str = "TP") -> TwinComparison:
    """Line up the two tables' groups (EP minus TP, in percentage points)."""
    ep_groups = {g.group: g for g in ep.groups}
    tp_groups = {g.group: g for g in tp.groups}
    rows = tuple(GroupComparison(group=group, label=ep_groups[group].label,
                                 ep_share_pct=ep_groups[group].share_pct, tp_share_pct=tp_groups[group].share_pct,
                                 delta_pp=ep_groups[group].share_pct - tp_groups[group].share_pct,
                                 ep_ms=ep_groups[group].total_ms, tp_ms=tp_groups[group].total_ms)
                 for group in GROUPS)
    comparable = ep.source == tp.source
    note = None if comparable else f"different bases: {ep.basis} vs {tp.basis}"
    return TwinComparison(ep_label=ep_label, tp_label=tp_label, comparable=comparable, note=note, groups=rows)


def render_comparison_md(comparison: TwinComparison) -> str:
    """A markdown table: one row per group, both shares and the difference."""
    ep, tp = comparison.ep_label, comparison.tp_label
    lines = [f"| group | {ep} share | {tp} share | Δ (pp) | {ep} ms | {tp} ms |", "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {g.label} | {g.ep_share_pct:.1f}% | {g.tp_share_pct:.1f}% | {g.delta_pp:+.1f} | {g.ep_ms:.2f} | "
              f"{g.tp_ms:.2f} |" for g in comparison.groups]
    if comparison.note:
        lines += ["", f"Not comparable as is: {comparison.note}."]
    return "\n".join(lines) + "\n"
