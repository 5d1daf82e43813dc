"""The machine-speed probe: both parts run, and more work takes proportionally longer."""

from __future__ import annotations

from harness.calibration.probe import TRIALS, ProbeResult, probe, python_work, torch_work


def test_probe_times_both_parts() -> None:
    import os

    result = probe("now", trials=1)
    assert result.at == "now" and result.trials == 1 and result.python_s > 0 and result.torch_s > 0
    assert result.workers == len(os.sched_getaffinity(0))  # one worker per core: a busy core slows the probe
    assert probe("one", trials=1, workers=1).workers == 1
    assert result.seconds == (result.python_s * result.torch_s) ** 0.5


def test_the_work_is_fixed() -> None:
    assert python_work(100) == python_work(100)  # deterministic: the same work every time
    assert torch_work(5) == torch_work(5)


def test_probe_seconds_scale_with_the_work() -> None:
    import time

    def timed(n: int) -> float:
        start = time.perf_counter()
        python_work(n)
        return time.perf_counter() - start

    small, large = min(timed(5_000) for _ in range(3)), min(timed(20_000) for _ in range(3))
    assert 2.5 < large / small < 6.0  # 4x the work: about 4x the time (a slower machine reads as longer)
    assert ProbeResult(at="x", python_s=0.2, torch_s=0.8).seconds == 0.4
    assert TRIALS >= 3
