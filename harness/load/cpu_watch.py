"""The load generator watching itself: was the client, not the server, the bottleneck of a cell?

A single asyncio process can saturate: then requests queue in the client, TTFT grows for reasons that have nothing
to do with the server, and every figure of the cell is suspect (InferenceX's known limitation). Two signals, both
cheap: the process's CPU time over the measured phase's wall time (1.0 = one core fully busy; the event loop
cannot use more), and the event loop's lag (how late a 20 ms timer fires; a busy loop also stamps chunks late).
The result is stored in the cell's summary and the report warns when either crosses its threshold.

A late tick has two causes that mean different things. If the process was computing through it, the client's own
work held the loop (the client may have limited the cell). If it was waiting for a core, other processes held the
machine's cores (on a small machine, the server's own); the server's writes wait the same way, so chunks stamped in
such a wait arrive together. The two are told apart per tick by the kernel's own account of the run-queue wait of
the process's threads (``/proc/self/task/*/schedstat``: the loop thread's, and any other's, since a thread that
waits for a core while it holds the GIL holds the loop too), or, where those files are missing, by the CPU time
the process spent over the tick.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

CPU_BUSY = 0.8
"""CPU utilisation (fraction of one core) above which the client may have been the bottleneck."""
LAG_P99_MS = 5.0
"""Event-loop lag (p99) above which chunk timestamps may be late by as much."""
_TICK_S = 0.02
_TASKS = Path("/proc/self/task")


def run_queue_wait_s() -> float | None:
    """Seconds the process's live threads have spent runnable but waiting for a core (Linux schedstat); None
    elsewhere."""
    try:
        return sum(int((task / "schedstat").read_text().split()[1]) for task in _TASKS.iterdir()) / 1e9
    except FileNotFoundError:  # a thread that ended between the listing and the read: read again
        return run_queue_wait_s()
    except (OSError, IndexError, ValueError):
        return None


class ClientLoad(BaseModel):
    """How busy the client process was during a measured phase."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_s: float
    """Process CPU seconds (user + system) over the measured phase."""
    cpu_util: float
    """Process CPU seconds / wall seconds (1.0 = one core fully busy)."""
    loop_lag_p99_ms: float
    loop_lag_max_ms: float
    bottleneck: bool
    """True when the client may have limited the cell (see ``reason``)."""
    reason: str | None = None
    starved_lag_p99_ms: float | None = None
    """p99 lag over the ticks the process spent waiting for a core rather than computing (None: not recorded)."""
    starved: bool = False
    """True when waiting for a core, not the client's own work, delayed the client past the lag threshold."""
    run_queue_wait_s: float | None = None
    """Seconds the process's threads waited for a core over the phase (kernel schedstat; None: not available)."""


class CpuWatch:
    """Measures the client process between ``start()`` and ``stop()`` (one measured phase)."""

    def __init__(self, run_queue_wait: Callable[[], float | None] = run_queue_wait_s) -> None:
        self._waited = run_queue_wait
        self._lags: list[float] = []
        self._starved: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self._cpu0 = self._wall0 = 0.0
        self._wait0: float | None = None

    def start(self) -> None:
        self._cpu0, self._wall0 = time.process_time(), time.perf_counter()
        self._wait0 = self._waited()
        self._task = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            start, cpu, waited = time.perf_counter(), time.process_time(), self._waited()
            await asyncio.sleep(_TICK_S)
            wall = time.perf_counter() - start
            lag = max(0.0, wall - _TICK_S)
            self._lags.append(lag)
            after = self._waited()
            queued = None if waited is None or after is None else after - waited
            self._starved.append(lag if waited_for_a_core(lag, wall, time.process_time() - cpu, queued) else 0.0)

    async def stop(self) -> ClientLoad:
        wall = time.perf_counter() - self._wall0
        cpu = time.process_time() - self._cpu0
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        waited_now = self._waited()
        waited = None if self._wait0 is None or waited_now is None else waited_now - self._wait0
        return client_load(self._lags, self._starved, cpu, wall, waited)


def waited_for_a_core(lag: float, wall: float, cpu: float, queued: float | None) -> bool:
    """One late tick (``lag`` seconds late over ``wall``), read as a wait for a core rather than the loop's own work:
    by the kernel's account where there is one (``queued``: the run-queue wait over the tick), most of the lateness
    spent runnable; otherwise, less than half of the tick spent computing (``cpu``)."""
    if queued is not None:
        return queued >= 0.5 * lag
    return cpu < 0.5 * wall


def client_load(lags: Sequence[float], starved: Sequence[float], cpu: float, wall: float,
                waited: float | None) -> ClientLoad:
    """The phase's verdict from its ticks: each tick's lag (seconds) and the part of it spent waiting for a core
    (the whole lag or 0), the process's CPU seconds over the phase's wall seconds, and its run-queue wait."""
    lag_ms = np.asarray(lags or [0.0]) * 1000.0
    starved_ms = np.asarray(starved or [0.0]) * 1000.0
    busy = lag_ms - starved_ms  # each tick's lag is either the loop's own work or a wait for a core
    util = cpu / wall if wall > 0 else 0.0
    p99, worst = float(np.percentile(lag_ms, 99)), float(lag_ms.max())
    busy_p99, starved_p99 = float(np.percentile(busy, 99)), float(np.percentile(starved_ms, 99))
    reasons = []
    if util >= CPU_BUSY:
        reasons.append(f"the client used {util:.0%} of a core (threshold {CPU_BUSY:.0%})")
    if busy_p99 >= LAG_P99_MS:
        reasons.append(f"its event loop lagged {busy_p99:.1f} ms at p99 in its own work "
                       f"(threshold {LAG_P99_MS:g} ms)")
    stalled = starved_p99 >= LAG_P99_MS
    if stalled:
        spent = "" if waited is None else f", {waited:.1f} s in all over {wall:.0f} s"
        reasons.append(f"it waited for a core: {starved_p99:.1f} ms at p99{spent}, using {util:.0%} of one; "
                       "the server's processes wait alike, and a server that writes late sends chunks together")
    return ClientLoad(cpu_s=cpu, cpu_util=util, loop_lag_p99_ms=p99, loop_lag_max_ms=worst,
                      bottleneck=util >= CPU_BUSY or busy_p99 >= LAG_P99_MS, reason="; ".join(reasons) or None,
                      starved_lag_p99_ms=starved_p99, starved=stalled, run_queue_wait_s=waited)
