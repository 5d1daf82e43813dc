"""Is this process kept from running? A process that only sleeps 20 ms at a time, reporting how late it wakes
and how much of that the kernel spent with it runnable but waiting for a core.

Run it beside a benchmark (``.venv/bin/python docs/studies/reproducibility/stall_probe.py 300`` in one shell,
``make regress`` in another).
It does no work of its own, so a late wake-up is time it could not run. The second figure, the thread's run-queue
wait from ``/proc/thread-self/schedstat``, says why: when it accounts for the lateness, the guest's own scheduler
gave the cores to other processes; when it does not, the whole machine (a VM's vCPU) was not running.

What it showed on the 2-core VMs this project is developed on, while a vLLM CPU server launched in a session of
its own (as the harness used to launch it) served load: wake-ups up to 0.8 s late (5.6 s for a probe pinned to the
core of the engine's worker), all of it run-queue wait, none unexplained. With ``kernel.sched_autogroup_enabled=0``,
or with the server in the benchmark's session (as the harness launches it now), no tick was more than 20 ms late.
Prints one line per 5 s.
"""

from __future__ import annotations

import sys
import time

from harness.load.cpu_watch import run_queue_wait_s

TICK_S = 0.02
WINDOW = 250  # ticks per line: 5 s
LATE_MS = 20.0


def run_queue_wait_ms() -> float:
    """The client watch's own reading, in ms; 0 where the kernel keeps no schedstat (every lag then unexplained)."""
    return (run_queue_wait_s() or 0.0) * 1000.0


def report(lags: list[float], waits: list[float]) -> str:
    ordered = sorted(lags)
    late = [i for i, lag in enumerate(lags) if lag > LATE_MS]
    late_ms = sum(lags[i] for i in late)
    waited_ms = sum(min(waits[i], lags[i]) for i in late)
    return (f"{time.strftime('%H:%M:%S')} lag p50 {ordered[len(ordered) // 2]:.2f} "
            f"p99 {ordered[int(0.99 * len(ordered))]:.1f} max {ordered[-1]:.1f} ms; "
            f"{len(late)} ticks > {LATE_MS:g} ms late: {late_ms:.0f} ms, of which run-queue wait {waited_ms:.0f} ms")


def main(seconds: float) -> None:
    lags: list[float] = []
    waits: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        due, waited = time.perf_counter() + TICK_S, run_queue_wait_ms()
        time.sleep(TICK_S)
        lags.append(max(0.0, time.perf_counter() - due) * 1000.0)
        waits.append(run_queue_wait_ms() - waited)
        if len(lags) == WINDOW:
            print(report(lags, waits), flush=True)
            lags.clear()
            waits.clear()


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 300.0)
