"""Nsight Systems command lines: a server's argv run under ``nsys profile``, and ``nsys stats`` to export CSVs.

The capture is opened and closed by the engine itself: launched with ``--capture-range=cudaProfilerApi``, nsys
records nothing until a worker calls ``cudaProfilerStart`` (vLLM with ``{"profiler":"cuda"}`` on ``/start_profile``;
SGLang with the ``CUDA_PROFILER`` activity) and stops at ``cudaProfilerStop`` (``/stop_profile``). So warm-up and
server start-up stay out of the report, and its size is bounded by the window the harness holds open.

Flag choices (the Nsight Systems CLI; vLLM's profiling guide, ``docs/contributing/profiling.md`` in its repository):

- ``--trace-fork-before-exec=true``: the engine core and the workers are child processes of the API server.
- ``--cuda-graph-trace=node``: kernels inside CUDA graphs are traced one by one; the default (``graph``) shows one
  launch per graph replay and would hide every decode kernel.
- ``--capture-range-end=repeat``: each start/stop pair writes its own report and the next start opens a new one,
  because the harness reuses one server for several cells (``stop`` would record only the first window).
- ``--sample=none --cpuctxsw=none``: no CPU IP sampling or context-switch trace; they are most of a long
  report's size and say nothing about GPU time shares.
- ``--force-overwrite=true``: a rerun of a cell replaces its report.

On a CPU there is no CUDA profiler API to open the range: ``NsysOptions.cpu_window`` traces OS runtime and NVTX,
samples the process tree's stacks (``--backtrace=fp``: the default ``lbr`` is Intel-only and hangs the collector at
shutdown on AMD, seen with nsys 2022.4), and captures ``--duration`` seconds after a ``--delay`` the caller sets
past the server's readiness; nsys then ends the server itself (``nsys_cpu.capture_cpu_window`` drives it).

Only argv is built here; nothing runs nsys except the caller (and ``summarize`` for ``nsys stats``).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.profiling.nsys_stats import REPORTS

REPORT_SUFFIX = ".nsys-rep"
BUNDLED = Path(__file__).resolve().parents[2] / "build" / "nsys" / "usr" / "bin" / "nsys"
"""Where ``make setup`` unpacks Nsight Systems from Debian's non-free packages (``scripts/install-nsys.sh``)."""


class NsysOptions(BaseModel):
    """How ``nsys profile`` wraps a server; the defaults are the recipe above."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    executable: str = Field("nsys", description="nsys on PATH, or its full path")
    trace: tuple[str, ...] = Field(("cuda", "nvtx", "osrt"), description="APIs to trace (add 'cublas' for names)")
    cuda_graph_trace: Literal["node", "graph"] = "node"
    capture_range_end: str = Field("repeat", pattern=r"^(stop|stop-shutdown|repeat(:\d+)?|repeat-shutdown:\d+)$")
    sample: Literal["none", "process-tree", "system-wide"] = "none"
    cpuctxsw: Literal["none", "process-tree", "system-wide"] = "none"
    capture_range: Literal["cudaProfilerApi", "none"] = Field(
        "cudaProfilerApi", description="what opens the capture: the engine's CUDA profiler calls, or nothing (the "
        "delay and duration bound it)")
    backtrace: Literal["lbr", "fp", "dwarf"] | None = Field(None, description="stack unwinding for CPU samples")
    delay_s: int | None = Field(None, ge=0, description="whole seconds after launch before collection starts")
    duration_s: int | None = Field(None, gt=0, description="whole seconds collected; nsys then ends the application")
    extra_args: tuple[str, ...] = Field((), description="appended to the nsys options verbatim")

    @classmethod
    def cpu_window(cls, delay_s: int, duration_s: int, executable: str = "nsys", *,
                   sample: bool = True) -> NsysOptions:
        """A CPU server's window: OS runtime, NVTX and (with ``sample``) the process tree's stacks, ``duration_s``
        after ``delay_s`` (without sampling the collector never hung in about 15 captures on these machines)."""
        return cls(executable=executable, trace=("osrt", "nvtx"), capture_range="none",
                   sample="process-tree" if sample else "none", backtrace="fp" if sample else None,
                   cpuctxsw="none", delay_s=delay_s, duration_s=duration_s)


def find_nsys(executable: str = "nsys") -> str | None:
    """The nsys binary's path, or None when it is not installed (the profile is then missing, not an error):
    ``executable`` on PATH (a machine's own install wins), else the one ``make setup`` unpacked into build/."""
    found = shutil.which(executable)
    if found is None and executable == "nsys" and BUNDLED.is_file():
        return str(BUNDLED)
    return found


def nsys_profile_argv(engine_argv: Sequence[str], output: Path, options: NsysOptions | None = None) -> list[str]:
    """``nsys profile <flags> -o <output> <engine argv...>``; nsys adds ``.nsys-rep`` to ``output``."""
    opts = options or NsysOptions()
    argv = [opts.executable, "profile", f"--trace={','.join(opts.trace)}"]
    if "cuda" in opts.trace:
        argv += ["--trace-fork-before-exec=true", f"--cuda-graph-trace={opts.cuda_graph_trace}"]
    if opts.capture_range != "none":
        argv += [f"--capture-range={opts.capture_range}", f"--capture-range-end={opts.capture_range_end}"]
    argv += [f"--sample={opts.sample}", f"--cpuctxsw={opts.cpuctxsw}"]
    if opts.backtrace is not None:
        argv.append(f"--backtrace={opts.backtrace}")
    if opts.delay_s is not None:
        argv.append(f"--delay={opts.delay_s}")
    if opts.duration_s is not None:
        argv.append(f"--duration={opts.duration_s}")
    return [*argv, "--force-overwrite=true", "-o", str(output), *opts.extra_args, *engine_argv]


def nsys_profile_launch(engine_argv: Sequence[str], env: dict[str, str], output: Path,
                        options: NsysOptions | None = None) -> tuple[list[str], dict[str, str]]:
    """The (argv, extra env) that run a server under nsys. The engine's env passes through unchanged: nsys follows
    forked and spawned workers itself, and the engine-side switches are flags (``engine_profilers``)."""
    return nsys_profile_argv(engine_argv, output, options), dict(env)


def nsys_stats_argv(report: Path, prefix: Path, reports: Sequence[str] = tuple(REPORTS),
                    executable: str = "nsys") -> list[str]:
    """``nsys stats`` exporting each report as ``<prefix>_<report>.csv``.

    ``--force-export=true`` rebuilds the ``.sqlite`` next to the report, which nsys would otherwise reuse even when
    it is stale (a rerun that overwrote the report).
    """
    return [executable, "stats", "--force-export=true", "--report", ",".join(reports), "--format", "csv",
            "--output", str(prefix), str(report)]
