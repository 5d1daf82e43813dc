"""The one table every profile is reduced to: top kernels (or operators) by time, and time shares per group.

Both profilers feed it the same shape, ``(name, total_ns, calls)`` entries: ``nsys stats`` GPU kernel rows on a GPU,
operator self times from the torch profiler on the CPU. Shares are of the summed time of all entries, i.e. of
GPU kernel time (nsys, or torch with CUDA activity) or of CPU self time in the window (torch on the CPU), never of
wall-clock time; ``source`` and ``basis`` say which.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.profiling.kernel_groups import GROUP_LABELS, GROUPS, KernelGroup, classify

TableSource = Literal["nsys", "torch_cpu", "torch_gpu"]

SOURCE_BASIS: dict[TableSource, str] = {
    "nsys": "share of summed GPU kernel time (nsys cuda_gpu_kern_sum)",
    "torch_cpu": "share of summed operator self time on the CPU (torch profiler)",
    "torch_gpu": "share of summed GPU kernel time (torch profiler, CUDA activity)",
}


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KernelRow(_Frozen):
    """One kernel (GPU) or operator (CPU) with its summed time over the capture window."""

    name: str
    group: KernelGroup
    total_ms: float = Field(ge=0)
    share_pct: float = Field(ge=0, le=100)
    calls: int = Field(ge=0)


class GroupShare(_Frozen):
    """All kernels of one group together."""

    group: KernelGroup
    label: str
    total_ms: float = Field(ge=0)
    share_pct: float = Field(ge=0, le=100)
    calls: int = Field(ge=0)
    kernels: int = Field(ge=0, description="distinct kernel / operator names in the group")


class ProfileTable(_Frozen):
    """Top kernels by time and the time share of each group, for one profiled window."""

    source: TableSource
    basis: str = Field(description="what the shares are shares of")
    total_ms: float = Field(ge=0)
    distinct_kernels: int = Field(ge=0)
    top: tuple[KernelRow, ...]
    groups: tuple[GroupShare, ...] = Field(description="every group, in display order, zero when absent")

    def share(self, group: KernelGroup) -> float:
        return next(g.share_pct for g in self.groups if g.group == group)


def _pct(part: float, whole: float) -> float:
    return min(100.0, 100.0 * part / whole) if whole > 0 else 0.0


def build_table(entries: Iterable[tuple[str, float, int]], source: TableSource, top_n: int = 15) -> ProfileTable:
    """Merge ``(name, total_ns, calls)`` entries by name, classify each name, rank by time.

    Entries with the same name (one per worker trace, or per process) are summed first.
    """
    time_ns: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    for name, total_ns, count in entries:
        time_ns[name] += total_ns
        calls[name] += count
    total_ns = sum(time_ns.values())
    ranked = sorted(time_ns, key=lambda n: (-time_ns[n], n))
    top = tuple(KernelRow(name=n, group=classify(n), total_ms=time_ns[n] / 1e6, share_pct=_pct(time_ns[n], total_ns),
                          calls=calls[n]) for n in ranked[:top_n])
    by_group: dict[KernelGroup, list[str]] = defaultdict(list)
    for name in time_ns:
        by_group[classify(name)].append(name)
    groups = []
    for group in GROUPS:
        names = by_group.get(group, [])
        group_ns = sum(time_ns[n] for n in names)
        groups.append(GroupShare(group=group, label=GROUP_LABELS[group], total_ms=group_ns / 1e6,
                                 share_pct=_pct(group_ns, total_ns), calls=sum(calls[n] for n in names),
                                 kernels=len(names)))
    return ProfileTable(source=source, basis=SOURCE_BASIS[source], total_ms=total_ns / 1e6,
                        distinct_kernels=len(time_ns), top=top, groups=tuple(groups))
