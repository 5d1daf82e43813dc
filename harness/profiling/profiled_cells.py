"""The profile stage: where a profiled cell's time goes.

Profiles: the matrix's ``profile.cells`` selectors pick cells. Their server is launched with the engine's
profiler configured (the torch profiler on a CPU; on a GPU the CUDA profiler API, with the server under
``nsys profile``), and after the cell's measured load one more short window of the same load runs between the
engine's own ``/start_profile`` and ``/stop_profile``, so the measured figures never carry profiling overhead.
The capture is reduced to one table and written to ``profiles/<matrix>/<cell_id>/summary.md``; a profile that
fails or is missing is a summary saying why, and the cell's load-test results stand either way. On a CPU, cells
picked by ``profile.nsys_cells`` are also captured under Nsight Systems, in a launch of their own once their server
is done (``nsys_cpu``), and that capture's summary joins the torch profiler's in the same ``summary.md``.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harness.config.evidence_sections import ProfileSpec
from harness.config.hardware import GpuHardware
from harness.plan.cells import Cell
from harness.profiling.engine_profilers import ProfileMode, engine_profiler
from harness.profiling.nsys import nsys_profile_launch
from harness.profiling.nsys_cpu import ProfiledServer, capture_cpu_window, window_for
from harness.profiling.nsys_cpu_stats import summarize_cpu_capture
from harness.profiling.outcome import ProfileOutcome
from harness.profiling.summarize import ProfileSummary, summarize_outcome
from harness.profiling.summary_files import read_summary, write_summary
from harness.profiling.window import CaptureSpec, capture_window
from harness.servers.process import LaunchSpec
from harness.servers.runtime_lookup import get_runtime
from harness.store import Store

log = logging.getLogger(__name__)
NSYS_DIR = "nsys"
"""A CPU cell's Nsight Systems capture, inside its profile folder (``store.profile_dir``)."""
NSYS_ATTEMPTS = 2
"""A collector that hangs after the window is killed and tried again, without CPU sampling (``UNSAMPLED_RETRY``)."""
UNSAMPLED_RETRY = ("the first capture, with CPU sampling, hung after its window and was killed; this one ran "
                   "without CPU sampling (OS calls and NVTX only), so there are no top functions")


def profiled(spec: ProfileSpec | None, cells: Sequence[Cell]) -> list[Cell]:
    """The cells of ``cells`` the matrix asks to profile."""
    if spec is None:
        return []
    return [cell for cell in cells if any(cell.matches(rule) for rule in spec.cells)]


def mode_for(cell: Cell) -> ProfileMode:
    return "nsys" if isinstance(cell.server.hardware, GpuHardware) else "torch"


def _missing(spec: ProfileSpec, cells: Sequence[Cell], store: Store, *, force: bool = False) -> list[Cell]:
    """Profiled cells without a stored summary, or without the nsys capture the matrix asks of them (a run stopped
    between the two); all of them with ``force``."""
    under_nsys = nsys_cpu_cells(spec, cells)

    def missing(cell: Cell) -> bool:
        summary = read_summary(store.profile_dir(cell))
        return summary is None or (cell in under_nsys and summary.nsys_cpu is None)

    return [c for c in profiled(spec, cells) if force or missing(c)]


def _with_profiler(launch: LaunchSpec, cell: Cell, traces: Path) -> LaunchSpec:
    """The launch of ``cell``'s server with the engine's profiler on (and under ``nsys`` on a GPU)."""
    mode = mode_for(cell)
    try:
        engine = engine_profiler(cell.server.runtime)
    except KeyError:
        return launch  # the window then records the profile as missing, with the reason (window.capture_window)
    traces.mkdir(parents=True, exist_ok=True)
    argv = [*launch.argv, *engine.server_args(mode, traces)]
    env = {**launch.env, **engine.server_env(mode, traces)}
    if mode == "nsys":
        argv, env = nsys_profile_launch(argv, env, traces / "profile")
    return replace(launch, argv=tuple(argv), env=env)


async def _window(spec: ProfileSpec, store: Store, cell: Cell, base_url: str, launch_argv: Sequence[str],
                  run_load: Callable[[], Awaitable[None]]) -> None:
    """Capture one window of ``run_load`` for ``cell`` and write its summary; never raises for profiling faults."""
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


def nsys_cpu_cells(spec: ProfileSpec | None, cells: Sequence[Cell]) -> list[Cell]:
    """Of the profiled CPU cells among ``cells``, those the matrix also captures under Nsight Systems."""
    if spec is None:
        return []
    return [cell for cell in profiled(spec, cells) if mode_for(cell) == "torch"
            and any(cell.matches(rule) for rule in spec.nsys_cells)]


def nsys_floor_s(spec: ProfileSpec, cell: Cell) -> int:
    """The earliest second after launch ``cell``'s CPU nsys window may open: the matrix's floor, else its engine's."""
    if spec.nsys_delay_floor_s is not None:
        return spec.nsys_delay_floor_s
    return get_runtime(cell.server.runtime).nsys_cpu_floor_s


async def _nsys(spec: ProfileSpec, store: Store, cell: Cell, server: ProfiledServer,
                run_load: Callable[[float], Awaitable[None]], ready_s: float | None) -> None:
    """Capture ``cell``'s server under nsys in a launch of its own (``nsys_cpu``), summarise it, and add it to the
    cell's stored profile summary beside the torch profiler's table; never raises for profiling faults."""
    out = store.profile_dir(cell) / NSYS_DIR
    shutil.rmtree(out, ignore_errors=True)
    window = window_for(ready_s, spec.nsys_window_s, floor_s=nsys_floor_s(spec, cell))
    for attempt in range(1, NSYS_ATTEMPTS + 1):
        run = await capture_cpu_window(server, out, window, run_load)
        if not window.sample:  # only a retry samples nothing
            run = run.model_copy(update={"note": "; ".join(filter(None, (UNSAMPLED_RETRY, run.note)))})
        if not run.hung:
            break
        log.warning("nsys hung after the window of %s (killed, leftovers reaped)%s", cell.label,
                    "; capturing again without CPU sampling" if attempt < NSYS_ATTEMPTS else "")
        # CPU sampling is what hangs the collector (none in about 15 captures without it, docs/cpu-engine.md), so the
        # retry keeps the OS-call and NVTX summaries rather than risking a second hang and no profile at all
        window = window.model_copy(update={"sample": False})
    profile = await summarize_cpu_capture(run, out, top_n=spec.top_n)
    summary = read_summary(store.profile_dir(cell)) or ProfileSummary(
        cell_id=cell.cell_id, label=cell.label, outcome=ProfileOutcome.missing(
            cell.server.runtime, "torch", "no_output", "no torch profiler window was stored for this cell"))
    write_summary(summary.model_copy(update={"nsys_cpu": profile}), store.profile_dir(cell))
    log.info("nsys profile %s: %s", cell.label, run.outcome.status if run.outcome.captured else run.outcome.reason)


@dataclass(frozen=True, slots=True)
class ProfileStage:
    """The profile stage's one entry, built from the matrix's ``profile`` block and the run's store. It acts at four
    moments of a server's life, one method each: which cells still owe a profile (``owed``, before the round), the
    launch with the engine's profiler on (``launch``), the window after a cell's measured load (``window``), and,
    on a CPU, the Nsight Systems capture in a launch of its own once the server is done (``nsys``). Without a
    ``profile`` block it owes nothing."""

    spec: ProfileSpec | None
    store: Store

    def owed(self, cells: Sequence[Cell], *, force: bool = False) -> tuple[Cell, ...]:
        """Profiled cells without a stored summary, or without the nsys capture the matrix asks of them (a run
        stopped between the two); all of them with ``force``."""
        return () if self.spec is None else tuple(_missing(self.spec, cells, self.store, force=force))

    def under_nsys(self, cells: Sequence[Cell]) -> list[Cell]:
        """Of ``cells``, those also captured under Nsight Systems on a CPU."""
        return nsys_cpu_cells(self.spec, cells)

    def launch(self, launch: LaunchSpec, owed: Sequence[Cell]) -> LaunchSpec:
        """The server's launch with the engine's profiler on when one of its cells owes a profile (and under
        ``nsys`` on a GPU); unchanged otherwise."""
        if not owed:
            return launch
        return _with_profiler(launch, owed[0], self.store.trace_dir(owed[0].server.server_id))

    async def window(self, cell: Cell, base_url: str, launch_argv: Sequence[str],
                     run_load: Callable[[], Awaitable[None]]) -> None:
        """One window of ``run_load`` under the engine's profiler, summarised into the cell's ``summary.md``."""
        if self.spec is not None:
            await _window(self.spec, self.store, cell, base_url, launch_argv, run_load)

    async def nsys(self, cell: Cell, server: ProfiledServer, run_load: Callable[[float], Awaitable[None]],
                   ready_s: float | None) -> None:
        """``cell``'s server launched under nsys on its own, captured, and added to the cell's summary."""
        if self.spec is not None:
            await _nsys(self.spec, self.store, cell, server, run_load, ready_s)
