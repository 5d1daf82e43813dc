"""One Nsight Systems capture of a CPU server under load, in a launch of its own, watched from start to end.

On a CPU nothing inside the engine can open an nsys capture range (the GPU path's ``cudaProfilerStart``), and
``nsys launch`` with ``start``/``stop`` hangs at ``stop`` when it samples a multi-process app (docs/cpu-engine.md). So
the server is launched under ``nsys profile --delay D --duration W`` (``NsysOptions.cpu_window``), with D set past
the readiness its measured launch showed; the load runs from readiness to the window's end, when nsys ends the
server itself and writes its report. The whole capture is watched: nsys must exit within ``finalize_s`` after the
window, or its process group is killed and the collector's agents and temporary files are reaped by PID
(``nsys_reaper``); a capture that fails any way is returned as a missing profile with the reason, never raised.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from harness.errors import LaunchError
from harness.profiling.nsys import REPORT_SUFFIX, NsysOptions, find_nsys, nsys_profile_argv
from harness.profiling.nsys_reaper import MARKER_ENV, one_capture_at_a_time, reap_collector
from harness.profiling.outcome import ProfileFile, ProfileOutcome
from harness.servers.process import LaunchSpec, ServerProcess

REPORT_STEM = "nsys"
SERVER_LOG = "nsys-server.log"


class CpuWindow(BaseModel):
    """When the capture opens and how long it lasts, measured from the launch."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    delay_s: int = Field(ge=0, description="seconds from launch to the window (past the server's readiness)")
    window_s: int = Field(gt=0, description="seconds captured; nsys then ends the server")
    finalize_s: float = Field(60.0, gt=0, description="nsys must exit this long after the window, or it is hung")
    sample: bool = Field(True, description="CPU samples of the server's process tree; without them the capture "
                         "records OS calls and NVTX ranges only (the retry after a hung capture: about 15 captures "
                         "without sampling never hung on these machines)")
    startup_timeout_s: float = Field(600.0, gt=0)


def window_for(ready_s: float | None, window_s: int, *, floor_s: int = 110) -> CpuWindow:
    """A window opening after the readiness the server's measured launch showed, with a margin for a slower start
    under nsys (1.1x, plus 5 s: a start under nsys took about as long in the first probes, and 0.7-0.8x in the default's
    runs, where the measured launch has filled vLLM's compile cache), never before ``floor_s``
    (``profile.nsys_delay_floor_s``, else the engine's ``nsys_cpu_floor_s``; vLLM's is not understood: measured on
    2026-11-26 with nsys 2022.4 on a 2-core AMD EPYC, windows that opened 93-97 s after a vLLM server's launch hung
    nsys in 5 of 5 captures, it never ended the window, and those that opened at 109-110 s completed in 3 of 3, at
    the same readiness of 56-82 s)."""
    delay = max(floor_s, round(1.1 * ready_s + 5)) if ready_s is not None else floor_s + 60
    return CpuWindow(delay_s=delay, window_s=window_s, startup_timeout_s=delay + window_s + 60)


class CpuCaptureRun(BaseModel):
    """What one watched capture did, beside its outcome: for the summary and for a reader chasing a failure."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    outcome: ProfileOutcome
    window: CpuWindow
    ready_s: float | None = Field(None, description="seconds from launch to the server's readiness under nsys")
    exit_code: int | None = Field(None, description="nsys's exit code (the server's: 143 when nsys ended it)")
    reaped: tuple[str, ...] = Field((), description="what the watchdog killed or removed afterwards")
    hung: bool = Field(False, description="nsys never exited after the window (about 1 capture in 5 on AMD)")
    argv: tuple[str, ...] = ()
    note: str | None = None


OPEN_MARGIN_S = 1.0
"""The load starts this long after the window opens (nsys's clock and ours started a moment apart)."""
WARMUP_S = 5.0
"""Load right after readiness, so the window sees a warm server (its first requests pay one-off costs)."""


async def _load_until(run_load: Callable[[float], Awaitable[None]], srv: ServerProcess, deadline: float) -> None:
    """The cell's load until ``deadline`` (the window's end); nsys ends the server then, and the load with it."""
    while srv.alive and (left := deadline - time.monotonic()) > 0:
        began = time.monotonic()
        try:
            await asyncio.wait_for(run_load(left), left + 30.0)
        except TimeoutError:
            return
        if time.monotonic() - began < 0.5:  # the server is gone or refusing: do not spin
            await asyncio.sleep(0.5)


async def _load_through_window(run_load: Callable[[float], Awaitable[None]], srv: ServerProcess, opens: float,
                               closes: float) -> None:
    """A short warm-up, the server idle until the window opens, then the load through it. nsys starts sampling
    every thread of the process tree when the window opens; on 2 cores saturated by the load it hung doing so in 2
    of 2 captures of one run (2026-11-26), so the load waits for the window instead of running into it."""
    await _load_until(run_load, srv, min(time.monotonic() + WARMUP_S, opens))
    await asyncio.sleep(max(0.0, opens - time.monotonic()))
    await _load_until(run_load, srv, closes)


@dataclass(frozen=True)
class ProfiledServer:
    """The server a capture launches: its command, where it will listen, and its runtime (named in the outcome)."""

    launch: LaunchSpec
    host: str
    port: int
    runtime: str = "vllm"


async def capture_cpu_window(server: ProfiledServer, out_dir: Path, window: CpuWindow,
                             run_load: Callable[[float], Awaitable[None]], *,
                             executable: str = "nsys") -> CpuCaptureRun:
    """Launch ``server`` under nsys, load it through the window (``run_load(seconds)`` loads the server for about
    that long), and collect ``out_dir/nsys.nsys-rep``."""
    launch, runtime = server.launch, server.runtime
    nsys = find_nsys(executable)
    if nsys is None:
        return CpuCaptureRun(outcome=ProfileOutcome.missing(
            runtime, "nsys", "nsys_missing", f"{executable!r} is not on PATH and build/nsys has none: `make setup` "
            "unpacks Nsight Systems from Debian's non-free packages (scripts/install-nsys.sh)"), window=window)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / f"{REPORT_STEM}{REPORT_SUFFIX}"
    report.unlink(missing_ok=True)
    argv = nsys_profile_argv(launch.argv, out_dir / REPORT_STEM,
                             NsysOptions.cpu_window(window.delay_s, window.window_s, nsys, sample=window.sample))
    marker = uuid.uuid4().hex
    srv = ServerProcess(LaunchSpec(argv=tuple(argv), env={**launch.env, MARKER_ENV: marker},
                                   health_path=launch.health_path), server.host, server.port, out_dir / SERVER_LOG,
                        window.startup_timeout_s)
    fields: dict[str, object] = {"window": window, "argv": tuple(argv)}
    async with one_capture_at_a_time():  # the reap below cannot tell another capture's collector from this one's
        since, launched = time.time(), time.monotonic()
        try:
            async with srv:
                fields["ready_s"] = srv.ready_after_s
                opens = launched + window.delay_s
                closes = opens + window.window_s
                await _load_through_window(run_load, srv, opens + OPEN_MARGIN_S, closes)
                code = await srv.wait_exit(max(0.0, closes - time.monotonic()) + window.finalize_s)
                fields["exit_code"] = code
                if code is None:
                    reason = (f"nsys did not exit within {window.finalize_s:g} s of the window's end (a hung "
                              "collector): killed")
                    fields["outcome"] = ProfileOutcome.missing(runtime, "nsys", "failed", reason)
                    fields["hung"] = True
        except LaunchError as exc:
            fields["outcome"] = ProfileOutcome.missing(runtime, "nsys", "failed",
                                                       f"the server did not come up under nsys: {exc}")
        finally:
            # synchronous, so it runs to the end even when the capture is cancelled
            fields["reaped"] = tuple(reap_collector(since, marker))
    if "outcome" not in fields:
        fields["outcome"] = _collected(runtime, report, window, fields)
    ready = fields.get("ready_s")
    if isinstance(ready, float) and ready > window.delay_s:
        fields["note"] = (f"the server was ready {ready:.0f} s after launch, after the window opened at "
                          f"{window.delay_s} s: start-up is in the capture")
    return CpuCaptureRun.model_validate(fields)


def _collected(runtime: str, report: Path, window: CpuWindow, fields: dict[str, object]) -> ProfileOutcome:
    if not report.is_file():
        return ProfileOutcome.missing(runtime, "nsys", "no_output", f"nsys exited {fields.get('exit_code')} "
                                      f"without writing {report.name} (its log: {SERVER_LOG})")
    size = report.stat().st_size
    return ProfileOutcome(status="captured", runtime=runtime, mode="nsys", files=(ProfileFile(
        name=report.name, bytes=size),), total_bytes=size, window_s=float(window.window_s))
