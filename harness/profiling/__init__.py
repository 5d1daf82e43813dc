"""Profiles of chosen cells: where a decode step's time goes (MoE GEMM, attention, communication, other).

On a GPU the server runs under ``nsys profile`` (``nsys.nsys_profile_launch``) with the engine's profiler set to
drive the CUDA profiler API (``engine_profilers``); on the CPU default the engine's torch profiler writes Chrome
traces, and cells in ``profile.nsys_cells`` are also captured under nsys in a launch of their own
(``nsys_cpu.capture_cpu_window``: OS runtime, NVTX, CPU sampling; watched, and its leftovers reaped). The engine's
own window (``window.capture_window``) is opened and closed through ``/start_profile`` and ``/stop_profile``
around the cell's load, its files are reduced to one table (``summarize.summarize_outcome``) and written as
``profiles/<matrix>/<cell>/summary.md`` (``summary.write_summary``).

The pipeline reaches the stage through ``stage.ProfileStage`` (what a cell owes, the launch, the window, the nsys
capture). The parts, used directly::

    engine = engine_profiler("vllm")
    argv += engine.server_args("torch", trace_dir)                 # at launch
    outcome = await capture_window(base_url, "vllm", run_load, out_dir, CaptureSpec(trace_dir=trace_dir))
    summary = await summarize_outcome(outcome, out_dir, cell_id=cell.id, label=cell.label)
    write_summary(summary, out_dir)
"""

from harness.profiling.engine_profilers import EngineProfiler, ProfileMode, engine_profiler, profiled_runtimes
from harness.profiling.ep_vs_tp import TwinComparison, compare_twins, render_comparison_md
from harness.profiling.kernel_groups import GROUP_LABELS, GROUPS, KernelGroup, classify
from harness.profiling.nsys import NsysOptions, find_nsys, nsys_profile_argv, nsys_profile_launch, nsys_stats_argv
from harness.profiling.nsys_cpu import CpuCaptureRun, CpuWindow, ProfiledServer, capture_cpu_window, window_for
from harness.profiling.nsys_cpu_stats import CpuProfile, SampledFunction, summarize_cpu_capture
from harness.profiling.nsys_reaper import leftover_pids, reap_collector
from harness.profiling.nsys_stats import NsysStats, load_stats
from harness.profiling.outcome import ProfileFile, ProfileOutcome
from harness.profiling.profiled_cells import ProfileStage, nsys_cpu_cells, nsys_floor_s
from harness.profiling.summarize import ProfileSummary, summarize_outcome
from harness.profiling.summary_files import read_summary, render_summary_md, write_summary
from harness.profiling.table import GroupShare, KernelRow, ProfileTable, build_table
from harness.profiling.torch_trace import find_traces, summarize_traces
from harness.profiling.window import CaptureSpec, capture_window

__all__ = [
    "build_table", "capture_cpu_window", "capture_window", "CaptureSpec", "classify", "compare_twins",
    "CpuCaptureRun", "CpuProfile", "CpuWindow", "engine_profiler", "EngineProfiler", "find_nsys", "find_traces",
    "GROUP_LABELS", "GROUPS", "GroupShare", "KernelGroup", "KernelRow", "leftover_pids", "load_stats",
    "nsys_cpu_cells", "nsys_floor_s", "nsys_profile_argv", "nsys_profile_launch", "nsys_stats_argv", "NsysOptions",
    "NsysStats",
    "profiled_runtimes", "ProfiledServer", "ProfileFile", "ProfileMode", "ProfileOutcome", "ProfileStage",
    "ProfileSummary", "ProfileTable", "read_summary", "reap_collector", "render_comparison_md", "render_summary_md",
    "SampledFunction", "summarize_cpu_capture", "summarize_outcome", "summarize_traces", "TwinComparison",
    "window_for", "write_summary",
]
