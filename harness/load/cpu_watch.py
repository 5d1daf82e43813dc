"""The load generator watching itself: was the client, not the server, the bottleneck of a cell?

A single asyncio process can saturate: then requests queue in the client, TTFT grows for reasons that have nothing
to do with the server, and every figure of the cell is suspect (InferenceX's known limitation). Two signals, both
cheap: the process's CPU time over the measured phase's wall time (1.0 = one core fully busy; the event loop
cannot use more), and the event loop's lag (how late a 20 ms timer fires; a busy loop also stamps chunks late).
The result is stored in the cell's summary and the report warns when either crosses its threshold.

A late tick has two causes that mean different things. If the process was computing through it, the client's own
work held the loop (the client may have limited the cell). If it used almost no CPU through it, the process was
waiting for a core: the machine stalled every process, the server's among them, and chunks that arrived during
the stall are read, and stamped, together at its end. The two are told apart per tick by the process CPU time
spent over the tick's wall time.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np
from pydantic import BaseModel, ConfigDict

CPU_BUSY = 0.8
"""CPU utilisation (fraction of one core) above which the client may have been the bottleneck."""
LAG_P99_MS = 5.0
"""Event-loop lag (p99) above which chunk timestamps may be late by as much."""
_TICK_S = 0.02


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
    """True when the machine, not the client's own work, delayed the client past the lag threshold."""


class CpuWatch:
    """Measures the client process between ``start()`` and ``stop()`` (one measured phase)."""

    def __init__(self) -> None:
        self._lags: list[float] = []
        self._starved: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self._cpu0 = self._wall0 = 0.0

    def start(self) -> None:
        self._cpu0, self._wall0 = time.process_time(), time.perf_counter()
        self._task = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            start, cpu = time.perf_counter(), time.process_time()
            await asyncio.sleep(_TICK_S)
            wall = time.perf_counter() - start
            lag = max(0.0, wall - _TICK_S)
            self._lags.append(lag)
            # computing for less than half of a late tick: the loop was not busy, the process was not running
            self._starved.append(lag if time.process_time() - cpu < 0.5 * wall else 0.0)

    async def stop(self) -> ClientLoad:
        wall = time.perf_counter() - self._wall0
        cpu = time.process_time() - self._cpu0
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        lags = np.asarray(self._lags or [0.0]) * 1000.0
        starved = np.asarray(self._starved or [0.0]) * 1000.0
        busy = lags - starved  # each tick's lag is either the loop's own work or a wait for a core
        util = cpu / wall if wall > 0 else 0.0
        p99, worst = float(np.percentile(lags, 99)), float(lags.max())
        busy_p99, starved_p99 = float(np.percentile(busy, 99)), float(np.percentile(starved, 99))
        reasons = []
        if util >= CPU_BUSY:
            reasons.append(f"the client used {util:.0%} of a core (threshold {CPU_BUSY:.0%})")
        if busy_p99 >= LAG_P99_MS:
            reasons.append(f"its event loop lagged {busy_p99:.1f} ms at p99 while computing "
                           f"(threshold {LAG_P99_MS:g} ms)")
        stalled = starved_p99 >= LAG_P99_MS
        if stalled:
            reasons.append(f"the machine stalled it: {starved_p99:.1f} ms at p99 waiting for a core while using "
                           f"{util:.0%} of one; chunks arriving in a stall share its end as their stamp")
        return ClientLoad(cpu_s=cpu, cpu_util=util, loop_lag_p99_ms=p99, loop_lag_max_ms=worst,
                          bottleneck=util >= CPU_BUSY or busy_p99 >= LAG_P99_MS, reason="; ".join(reasons) or None,
                          starved_lag_p99_ms=starved_p99, starved=stalled)
