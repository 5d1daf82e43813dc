"""Does the machine stall its processes? A process that only sleeps 20 ms at a time, reporting how late it wakes.

Run it beside a benchmark (``python3 benchmarks/stall_probe.py 300`` in one shell, ``make regress`` in another).
It does no work of its own, so a late wake-up is time the machine kept it from running: on a quiet machine p99 stays
within a few milliseconds; the 2-core VMs this project is developed on showed wake-ups up to 0.8 s late while vLLM
served. Prints one line per 10 s: lag p50 / p99 / max in ms.
"""

from __future__ import annotations

import statistics
import sys
import time

TICK_S = 0.02
WINDOW = 500  # ticks per line: 10 s


def main(seconds: float) -> None:
    lags: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        due = time.perf_counter() + TICK_S
        time.sleep(TICK_S)
        lags.append(max(0.0, time.perf_counter() - due) * 1000.0)
        if len(lags) == WINDOW:
            ordered = sorted(lags)
            print(f"{time.strftime('%H:%M:%S')} lag p50 {statistics.median(ordered):.2f} "
                  f"p99 {ordered[int(0.99 * len(ordered))]:.1f} max {ordered[-1]:.1f} ms", flush=True)
            lags.clear()


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 300.0)
