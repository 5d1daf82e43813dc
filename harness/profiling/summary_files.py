"""``profiles/<matrix>/<cell>/summary.md`` and ``summary.json``: the profile table as the report shows it.

``summary.json`` is the ``ProfileSummary`` (the report and tools read it back with ``read_summary``);
``summary.md`` is the same content as markdown tables, included verbatim by the report. A missing or too-large
profile still gets both files, saying so and why, so a reader never has to guess why a section is empty.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from harness.profiling.kernel_groups import GROUP_LABELS
from harness.profiling.nsys_cpu_stats import CpuProfile
from harness.profiling.summarize import ProfileSummary
from harness.profiling.table import ProfileTable
from harness.store import write_atomic
from harness.stored_files import load_or_set_aside

SUMMARY_MD = "summary.md"
SUMMARY_JSON = "summary.json"
_NAME_WIDTH = 96
_MODE_LABELS = {"nsys": "Nsight Systems", "torch": "torch profiler"}


def _cell(text: str, width: int = _NAME_WIDTH) -> str:
    # Kernel names are C++ templates: cut them for the table (summary.json keeps them whole) and keep pipes literal.
    short = text if len(text) <= width else text[: width - 1] + "…"
    return "`" + short.replace("|", "\\|").replace("`", "'") + "`"


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def render_table_md(table: ProfileTable) -> list[str]:
    """The group shares and the top kernels as two markdown tables."""
    lines = [f"Basis: {table.basis}; {table.total_ms:.1f} ms over {table.distinct_kernels} distinct names.", "",
             "| group | time (ms) | share | calls |", "|---|---:|---:|---:|"]
    lines += [f"| {g.label} | {g.total_ms:.2f} | {g.share_pct:.1f}% | {g.calls} |" for g in table.groups]
    lines += ["", f"Top {len(table.top)} by time:", "",
              "| # | kernel / operator | group | total (ms) | share | calls |", "|---:|---|---|---:|---:|---:|"]
    lines += [f"| {i} | {_cell(r.name)} | {GROUP_LABELS[r.group]} | {r.total_ms:.2f} | {r.share_pct:.1f}% "
              f"| {r.calls} |" for i, r in enumerate(table.top, 1)]
    if table.source == "torch_cpu":
        lines += ["", "On the CPU, rows named like `execute_context_*` are vLLM's per-step annotations: their self "
                  "time is the Python and framework time between operators."]
    return lines


def render_summary_md(summary: ProfileSummary) -> str:
    """The whole ``summary.md``."""
    out = summary.outcome
    title = summary.label or summary.cell_id or "profile"
    lines = [f"### Profile: {title}", ""]
    what = f"{_MODE_LABELS[out.mode]} on {out.runtime}"
    if out.status == "missing":
        lines += [f"**Missing** ({what}): {out.reason}", "",
                  "The cell's load-test results stand; only its profile is absent."]
        if summary.nsys_cpu is not None:
            lines += ["", *render_nsys_cpu_md(summary.nsys_cpu)]
        return "\n".join(lines) + "\n"
    window = f"window {out.window_s:.1f} s" if out.window_s is not None else "window unknown"
    if out.window_truncated:
        window += " (cut at the window cap; the load finished unprofiled)"
    lines += [f"Captured with the {what}: {window}; {len(out.files)} file(s), {_mib(out.total_bytes)}.", ""]
    if out.status == "too_large":
        lines += [f"**Too large, not summarized**: {out.reason}"]
    elif summary.summarize_error:
        lines += [f"**Captured but not summarized**: {summary.summarize_error}"]
    elif summary.table is not None:
        lines += render_table_md(summary.table)
    if summary.memcopies:
        lines += ["", "Memory copies (GPU time):", "", "| operation | total (ms) | count |", "|---|---:|---:|"]
        lines += [f"| {m.operation} | {m.total_time_ns / 1e6:.2f} | {m.count} |" for m in summary.memcopies]
    if summary.nccl_ranges:
        lines += ["", "NCCL calls (NVTX ranges, host side):", "", "| range | total (ms) | calls |", "|---|---:|---:|"]
        lines += [f"| {r.range} | {r.total_time_ns / 1e6:.2f} | {r.instances} |" for r in summary.nccl_ranges]
    if summary.launch_argv:
        lines += ["", "Profiled server command:", "", "```", shlex.join(summary.launch_argv), "```"]
    if summary.nsys_cpu is not None:
        lines += ["", *render_nsys_cpu_md(summary.nsys_cpu)]
    return "\n".join(lines) + "\n"


def render_nsys_cpu_md(profile: CpuProfile) -> list[str]:
    """A CPU cell's Nsight Systems capture: where the samples landed and where OS-call time went."""
    run, out = profile.run, profile.run.outcome
    traced = "OS runtime, NVTX, CPU sampling" if run.window.sample else "OS runtime, NVTX; no CPU sampling"
    lines = [f"#### Nsight Systems (a launch of its own: {traced})", ""]
    window = (f"window {run.window.window_s} s from {run.window.delay_s} s after launch; server ready after "
              + (f"{run.ready_s:.0f} s" if run.ready_s is not None else "an unknown time"))
    if not out.captured:
        lines += [f"**Profile failed**: {out.reason} ({window})."]
    elif profile.summarize_error:
        lines += [f"Captured ({window}; {_mib(out.total_bytes)}), **not summarized**: {profile.summarize_error}"]
    else:
        sampled = f", {profile.samples:,} CPU samples" if run.window.sample else ""
        lines += [f"Captured: {window}; {_mib(out.total_bytes)}{sampled}."]
    if run.note:
        lines += ["", f"Note: {run.note}."]
    if profile.functions:
        lines += ["", "Top functions by CPU samples (leaf frame):", "", "| # | function | library | samples | share |",
                  "|---:|---|---|---:|---:|"]
        lines += [f"| {i} | {_cell(f.function)} | {_cell(f.module, 40)} | {f.samples:,} | {f.share_pct:.1f}% |"
                  for i, f in enumerate(profile.functions, 1)]
    if profile.os_calls:
        lines += ["", "OS-runtime calls by time (every thread's blocking included):", "",
                  "| call | total (ms) | share | calls |", "|---|---:|---:|---:|"]
        lines += [f"| {_cell(r.name, 40)} | {r.total_time_ns / 1e6:,.1f} | {r.time_pct:.1f}% | {r.num_calls:,} |"
                  for r in profile.os_calls]
    if profile.nvtx:
        lines += ["", "NVTX ranges:", "", "| range | total (ms) | instances |", "|---|---:|---:|"]
        lines += [f"| {_cell(r.range, 60)} | {r.total_time_ns / 1e6:,.1f} | {r.instances:,} |" for r in profile.nvtx]
    if run.reaped:
        lines += ["", "Left behind by the collector and cleaned up: " + "; ".join(run.reaped)]
    if run.argv:
        lines += ["", "Captured with:", "", "```", shlex.join(run.argv), "```"]
    return lines


def write_summary(summary: ProfileSummary, directory: Path) -> Path:
    """Write ``summary.json`` and ``summary.md`` atomically; returns the markdown path."""
    write_atomic(directory / SUMMARY_JSON, summary.model_dump_json(indent=2))
    write_atomic(directory / SUMMARY_MD, render_summary_md(summary))
    return directory / SUMMARY_MD


def read_summary(directory: Path) -> ProfileSummary | None:
    """The stored summary, or None when there is none (or it is from an incompatible version, or damaged: then set
    aside, and the next profiled run summarizes the cell again)."""
    return load_or_set_aside(directory / SUMMARY_JSON, ProfileSummary.model_validate_json)
