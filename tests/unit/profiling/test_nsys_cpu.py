"""A CPU capture's window is set from the measured readiness, and a missing nsys is a missing profile, not a crash."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.profiling import CpuWindow, capture_cpu_window, window_for
from harness.servers import LaunchSpec


def test_the_window_opens_well_after_the_readiness_the_measured_launch_showed() -> None:
    assert window_for(60.0, 20) == CpuWindow(delay_s=71, window_s=20, startup_timeout_s=151)
    assert window_for(5.0, 20).delay_s == 30  # never sooner than the floor
    assert window_for(None, 20).delay_s == 90  # no readiness known: a wide margin


async def test_no_nsys_is_a_missing_profile_that_launches_nothing(tmp_path: Path) -> None:
    calls: list[float] = []

    async def load(seconds: float) -> None:
        calls.append(seconds)

    launch = LaunchSpec(argv=(sys.executable, "-c", "raise SystemExit(3)"))
    run = await capture_cpu_window(launch, "127.0.0.1", 1, tmp_path, CpuWindow(delay_s=1, window_s=1), load,
                                   executable="no-such-nsys-binary-here")
    assert run.outcome.missing_kind == "nsys_missing" and "make setup" in str(run.outcome.reason)
    assert calls == [] and not run.argv


@pytest.mark.parametrize("bad", [{"delay_s": -1, "window_s": 1}, {"delay_s": 1, "window_s": 0}])
def test_a_window_is_checked(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        CpuWindow(**bad)
