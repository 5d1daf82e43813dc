"""The machine-speed probe: both parts run, on fixed work, and combine into one figure."""

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


def test_probe_seconds_combine_both_parts() -> None:
    # That the probe's time tracks the machine's speed is a timing claim, measured where timings belong: in
    # benchmarks/machine_speed.py (README), not in a unit test on a shared, noisy machine.
    assert ProbeResult(at="x", python_s=0.2, torch_s=0.8).seconds == 0.4
    assert TRIALS >= 3
