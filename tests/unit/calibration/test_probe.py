"""The machine-speed probe: both parts run, on fixed work, and combine into one figure."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from harness.calibration.probe import (
    PYTHON_ITERATIONS,
    TORCH_ITERATIONS,
    TRIALS,
    ProbeResult,
    probe,
    python_work,
    torch_work,
)

PROBE = sys.modules[probe.__module__]  # the module: harness.calibration re-exports the function under its name


def _lighter(work: Callable[[int], object], default: int) -> Callable[[int], object]:
    """``work`` at a hundredth of each size it is asked for."""
    return lambda iterations=default: work(max(1, iterations // 100))


@pytest.fixture
def light_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe's own two parts at a hundredth of their size (the forked workers inherit the swap): the test checks
    how the probe runs them, in one worker per core, each part timed, not how long they take (at full size, about
    5 s of torch per trial and worker)."""
    monkeypatch.setattr(PROBE, "python_work", _lighter(python_work, PYTHON_ITERATIONS))
    monkeypatch.setattr(PROBE, "torch_work", _lighter(torch_work, TORCH_ITERATIONS))


@pytest.mark.usefixtures("light_work")
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
    # docs/studies/reproducibility/machine_speed.py (docs/studies/reproducibility.md), not in a unit test on a
    # shared, noisy machine.
    assert ProbeResult(at="x", python_s=0.2, torch_s=0.8).seconds == 0.4
    assert TRIALS >= 3
