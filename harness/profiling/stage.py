"""The profile stage: where a profiled cell's time goes.

Profiles: the matrix's ``profile.cells`` selectors pick cells. Their server is launched with the engine's
profiler configured (the torch profiler on a CPU; on a GPU the CUDA profiler API, with the server under
``nsys profile``), and after the cell's measured load one more short window of the same load runs between the
engine's own ``/start_profile`` and ``/stop_profile``, so the measured figures never carry profiling overhead.
The capture is reduced to one table and written to ``profiles/<matrix>/<cell_id>/summary.md``; a profile that
fails or is missing is a summary saying why, and the cell's load-test results stand either way.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from harness.config.evidence import ProfileSpec
from harness.config.matrix import GpuHardware, Matrix
from harness.plan.cells import Cell
from harness.profiling.engine_profilers import ProfileMode, engine_profiler
from harness.profiling.nsys import nsys_profile_launch
from harness.profiling.summarize import summarize_outcome
from harness.profiling.summary import read_summary, write_summary
from harness.profiling.window import CaptureSpec, capture_window
from harness.servers.process import LaunchSpec
from harness.store import Store

log = logging.getLogger(__name__)


def profiled(spec: ProfileSpec | None, cells: Sequence[Cell]) -> list[Cell]:
    """The cells of ``cells`` the matrix asks to profile."""
    if spec is None:
        return []
    return [cell for cell in cells if any(cell.matches(rule) for rule in spec.cells)]


def mode_for(cell: Cell) -> ProfileMode:
    return "nsys" if isinstance(cell.server.hardware, GpuHardware) else "torch"


def missing_profiles(matrix: Matrix, cells: Sequence[Cell], store: Store, *, force: bool = False) -> list[Cell]:
    """Profiled cells without a stored summary (all of them with ``force``)."""
    return [c for c in profiled(matrix.profile, cells)
            if force or read_summary(store.profile_dir(c)) is None]


def with_profiler(launch: LaunchSpec, cell: Cell, traces: Path) -> LaunchSpec:
    """The launch of ``cell``'s server with the engine's profiler on (and under ``nsys`` on a GPU)."""
    mode = mode_for(cell)
    engine = engine_profiler(cell.server.runtime)
    traces.mkdir(parents=True, exist_ok=True)
    argv = [*launch.argv, *engine.server_args(mode, traces)]
    env = {**launch.env, **engine.server_env(mode, traces)}
    if mode == "nsys":
        argv, env = nsys_profile_launch(argv, env, traces / "profile")
    return dataclasses.replace(launch, argv=tuple(argv), env=env)


async def profile_cell(cell: Cell, matrix: Matrix, store: Store, base_url: str, launch_argv: Sequence[str],
                       run_load: Callable[[], Awaitable[None]]) -> None:
    """Capture one window of ``run_load`` for ``cell`` and write its summary; never raises for profiling faults."""
    spec = matrix.profile
    assert spec is not None
    out = store.profile_dir(cell)
    # A new capture replaces the old one whole: traces of a forced rerun must not sit beside the last run's
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    capture = CaptureSpec(mode=mode_for(cell), trace_dir=store.trace_dir(cell.server.server_id), prefix=cell.cell_id,
                          max_window_s=spec.max_window_s, max_size_mib=spec.max_size_mib)
    outcome = await capture_window(base_url, cell.server.runtime, run_load, out, capture)
    summary = await summarize_outcome(outcome, out, cell_id=cell.cell_id, label=cell.label,
                                      launch_argv=launch_argv, top_n=spec.top_n)
    write_summary(summary, out)
    log.info("profile %s: %s", cell.label, outcome.status if outcome.captured else outcome.reason)
