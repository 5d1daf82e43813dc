from __future__ import annotations

import asyncio
import time

import pytest

from harness.load.cpu_watch import CpuWatch, client_load, run_queue_wait_s, waited_for_a_core


class FakeRunQueue:
    """The kernel's run-queue clock, advanced by the test: a sleep the test declares a wait for a core."""

    def __init__(self) -> None:
        self.waited = 0.0

    def __call__(self) -> float:
        return self.waited


async def test_an_idle_client_never_reads_as_cpu_bound() -> None:
    """An idle loop on the real clocks: whatever a busy machine does to its ticks (the tests below classify late ticks
    on clocks they control), it never reads as a client that used its core."""
    watch = CpuWatch()
    watch.start()
    await asyncio.sleep(0.15)
    load = await watch.stop()
    assert load.cpu_util < 0.5 and "of a core" not in (load.reason or ""), load


async def test_a_busy_loop_is_flagged() -> None:
    # the kernel's clock held at zero wait: a neighbour's load cannot turn the client's own work into a wait
    watch = CpuWatch(FakeRunQueue())
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


def test_a_loop_kept_waiting_for_a_core_is_starved_not_a_busy_client() -> None:
    # three ticks held off 80 ms each, the kernel saying the loop was runnable throughout, among on-time ticks: on
    # numbers, since a loaded machine adds lateness of its own to any real sleep
    late = [0.08 if waited_for_a_core(0.08, 0.1, 0.0, 0.08) else 0.0] * 3
    load = client_load([0.001] * 7 + [0.08] * 3, [0.0] * 7 + late, cpu=0.001, wall=1.0, waited=0.24)
    assert load.starved and not load.bottleneck
    assert load.starved_lag_p99_ms is not None and load.starved_lag_p99_ms >= 40
    assert load.run_queue_wait_s == 0.24
    assert load.reason is not None and "waited for a core" in load.reason


def test_a_late_tick_is_a_wait_by_the_kernels_account_or_else_by_cpu_time() -> None:
    assert waited_for_a_core(lag=0.08, wall=0.1, cpu=0.08, queued=0.05)  # mostly runnable, whatever it computed
    assert not waited_for_a_core(lag=0.08, wall=0.1, cpu=0.0, queued=0.0)  # blocked in its own code
    assert waited_for_a_core(lag=0.08, wall=0.1, cpu=0.01, queued=None)  # no schedstat: it was not computing
    assert not waited_for_a_core(lag=0.08, wall=0.1, cpu=0.08, queued=None)


async def test_a_loop_blocked_in_its_own_code_is_not_called_starved() -> None:
    # a blocking call in the client (a sync file write, say) is the client's fault, whatever CPU it used
    watch = CpuWatch(FakeRunQueue())
    watch.start()
    await asyncio.sleep(0.03)
    for _ in range(3):
        time.sleep(0.08)
        await asyncio.sleep(0)
    load = await watch.stop()
    assert not load.starved and load.bottleneck
    assert load.reason is not None and "lagged" in load.reason


async def test_without_schedstat_cpu_time_tells_a_wait_from_work() -> None:
    watch = CpuWatch(lambda: None)
    watch.start()
    await asyncio.sleep(0.03)
    for _ in range(3):  # late ticks with no CPU spent: read as a wait for a core
        time.sleep(0.08)
        await asyncio.sleep(0)
    load = await watch.stop()
    assert load.starved and not load.bottleneck and load.run_queue_wait_s is None


@pytest.mark.skipif(run_queue_wait_s() is None, reason="no /proc/self/task/*/schedstat (not Linux)")
def test_the_kernel_does_not_count_sleep_as_waiting_for_a_core() -> None:
    before = run_queue_wait_s()
    time.sleep(0.2)
    after = run_queue_wait_s()
    assert before is not None and after is not None and 0.0 <= after - before < 0.1
