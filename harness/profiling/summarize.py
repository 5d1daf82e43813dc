"""A capture's files → its ``ProfileSummary``: the profile table, plus memory-copy and NCCL summaries under nsys.

One reducer per mode (``SUMMARIZERS``): ``torch`` parses the worker Chrome traces; ``nsys`` runs ``nsys stats``
on the report and parses its CSVs. A capture that cannot be summarized (nsys stats failing, a corrupt trace)
keeps its status and files and says why in ``summarize_error``; nothing here raises into the pipeline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from harness.profiling.engine_profilers import ProfileMode
from harness.profiling.nsys import REPORT_SUFFIX, nsys_stats_argv
from harness.profiling.nsys_cpu_stats import CpuProfile, run_nsys
from harness.profiling.nsys_stats import MemTimeSumRow, NvtxSumRow, load_stats
from harness.profiling.outcome import ProfileOutcome
from harness.profiling.table import ProfileTable, build_table
from harness.profiling.torch_trace import FRONTEND_MARK, TRACE_GLOB, TraceError, summarize_traces


class ProfileSummary(BaseModel):
    """Everything the report shows for one profiled cell (``summary.json``; ``summary.md`` renders it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cell_id: str | None = None
    label: str | None = Field(None, description="the cell as a person reads it, e.g. 'vllm bf16 ep8 c64'")
    outcome: ProfileOutcome
    table: ProfileTable | None = None
    memcopies: tuple[MemTimeSumRow, ...] = Field((), description="nsys cuda_gpu_mem_time_sum rows")
    nccl_ranges: tuple[NvtxSumRow, ...] = Field((), description="NCCL's NVTX ranges from nsys nvtx_sum")
    summarize_error: str | None = None
    launch_argv: tuple[str, ...] | None = Field(None, description="the server argv that was profiled (nsys prefix)")
    nsys_cpu: CpuProfile | None = Field(None, description="a CPU cell's Nsight Systems capture (profile.nsys_cells)")


class _Reduced(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    table: ProfileTable
    memcopies: tuple[MemTimeSumRow, ...] = ()
    nccl_ranges: tuple[NvtxSumRow, ...] = ()


async def _torch(files: Sequence[Path], top_n: int, nsys_executable: str) -> _Reduced:
    traces = [p for p in files if p.match(TRACE_GLOB) and FRONTEND_MARK not in p.name]
    table = await asyncio.to_thread(summarize_traces, traces, top_n)
    return _Reduced(table=table)


async def run_nsys_stats(report: Path, prefix: Path, executable: str = "nsys", timeout_s: float = 900.0) -> None:
    """Export the CSVs of one report; raises RuntimeError with nsys's own words when it fails."""
    await run_nsys(nsys_stats_argv(report, prefix, executable=executable), timeout_s)


async def _nsys(files: Sequence[Path], top_n: int, nsys_executable: str) -> _Reduced:
    reports = [p for p in files if p.name.endswith(REPORT_SUFFIX)]
    entries: list[tuple[str, float, int]] = []
    memcopies: list[MemTimeSumRow] = []
    nccl: list[NvtxSumRow] = []
    for report in reports:
        prefix = report.with_name(report.name.removesuffix(REPORT_SUFFIX) + "_stats")
        await run_nsys_stats(report, prefix, nsys_executable)
        stats = load_stats(prefix)
        entries += stats.kernel_entries()
        memcopies += stats.mem_time
        nccl += stats.nccl_ranges()
    if not entries:
        raise RuntimeError("nsys stats found no CUDA kernels in the capture range")
    return _Reduced(table=build_table(entries, "nsys", top_n), memcopies=tuple(memcopies), nccl_ranges=tuple(nccl))


SUMMARIZERS: dict[ProfileMode, Callable[[Sequence[Path], int, str], Awaitable[_Reduced]]] = {
    "torch": _torch, "nsys": _nsys,
}


async def summarize_outcome(outcome: ProfileOutcome, profile_dir: Path, *, cell_id: str | None = None,
                            label: str | None = None, launch_argv: Sequence[str] | None = None, top_n: int = 15,
                            nsys_executable: str = "nsys") -> ProfileSummary:
    """The summary of a capture whose files are in ``profile_dir``; missing and too-large captures are not parsed."""
    fields = {"cell_id": cell_id, "label": label, "outcome": outcome,
              "launch_argv": tuple(launch_argv) if launch_argv is not None else None}
    if not outcome.captured:
        return ProfileSummary.model_validate(fields)
    files = [profile_dir / f.name for f in outcome.files]
    try:
        reduced = await SUMMARIZERS[outcome.mode](files, top_n, nsys_executable)
    except (RuntimeError, TraceError, OSError, ValueError) as exc:
        return ProfileSummary.model_validate({**fields, "summarize_error": f"{type(exc).__name__}: {exc}"})
    return ProfileSummary.model_validate({**fields, **reduced.model_dump()})
