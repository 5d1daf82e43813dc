from __future__ import annotations

import asyncio
import time

from harness.load.cpu_watch import CpuWatch


async def test_an_idle_client_is_not_the_bottleneck() -> None:
    watch = CpuWatch()
    watch.start()
    await asyncio.sleep(0.15)
    load = await watch.stop()
    assert load.cpu_util < 0.5 and not load.bottleneck and load.reason is None


async def test_a_busy_loop_is_flagged() -> None:
    watch = CpuWatch()
    watch.start()
    await asyncio.sleep(0.03)
    for _ in range(3):  # hog the event loop: the 20 ms ticker fires late and the CPU is busy
        end = time.perf_counter() + 0.08
        while time.perf_counter() < end:
            pass
        await asyncio.sleep(0)
    load = await watch.stop()
    assert load.bottleneck and load.loop_lag_max_ms >= 40
    assert load.reason is not None and "lagged" in load.reason


async def test_a_loop_delayed_without_computing_is_a_machine_stall_not_a_busy_client() -> None:
    watch = CpuWatch()
    watch.start()
    await asyncio.sleep(0.03)
    for _ in range(3):  # the loop thread sleeps through its ticks: late, but the process uses no CPU
        time.sleep(0.08)
        await asyncio.sleep(0)
    load = await watch.stop()
    assert load.starved and not load.bottleneck
    assert load.starved_lag_p99_ms is not None and load.starved_lag_p99_ms >= 40
    assert load.reason is not None and "the machine stalled it" in load.reason
