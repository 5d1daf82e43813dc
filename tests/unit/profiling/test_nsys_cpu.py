"""A CPU capture's window is set from the measured readiness, and a missing nsys is a missing profile, not a crash."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.profiling import CpuWindow, ProfiledServer, capture_cpu_window, window_for
from harness.servers import LaunchSpec


def test_the_window_opens_well_after_the_readiness_the_measured_launch_showed() -> None:
    assert window_for(80.0, 20) == CpuWindow(delay_s=110, window_s=20, startup_timeout_s=190)
    assert window_for(100.0, 20).delay_s == 115
    assert window_for(5.0, 20).delay_s == 110  # never sooner than the floor (earlier windows hung nsys)
    assert window_for(5.0, 20, floor_s=30).delay_s == 30
    assert window_for(None, 20).delay_s == 170  # no readiness known: a wide margin


async def test_no_nsys_is_a_missing_profile_that_launches_nothing(tmp_path: Path) -> None:
    calls: list[float] = []

    async def load(seconds: float) -> None:
        calls.append(seconds)

    launch = LaunchSpec(argv=(sys.executable, "-c", "raise SystemExit(3)"))
    run = await capture_cpu_window(ProfiledServer(launch, "127.0.0.1", 1), tmp_path, CpuWindow(delay_s=1, window_s=1),
                                   load, executable="no-such-nsys-binary-here")
    assert run.outcome.missing_kind == "nsys_missing" and "make setup" in str(run.outcome.reason)
    assert calls == [] and not run.argv


@pytest.mark.parametrize("bad", [{"delay_s": -1, "window_s": 1}, {"delay_s": 1, "window_s": 0}])
def test_a_window_is_checked(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        CpuWindow(**bad)


async def test_the_load_warms_the_server_then_waits_for_the_window_and_runs_through_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """nsys starts sampling when the window opens: the server must be idle then (a saturated one hung it)."""
    import time

    from harness.profiling import nsys_cpu

    monkeypatch.setattr(nsys_cpu, "WARMUP_S", 0.05)
    calls: list[tuple[float, float]] = []  # (when the load started, for how long it was asked to run)

    async def load(seconds: float) -> None:
        calls.append((time.monotonic(), seconds))
        await nsys_cpu.asyncio.sleep(seconds)

    class Alive:
        alive = True

    start = time.monotonic()
    opens, closes = start + 0.4, start + 0.6
    await nsys_cpu._load_through_window(load, Alive(), opens, closes)  # type: ignore[arg-type]
    warmup, *window = calls
    assert warmup[1] <= 0.05 + 1e-6  # a short warm-up, not a load running into the window
    assert window and window[0][0] >= opens  # nothing between the warm-up and the window's opening
    assert time.monotonic() >= closes
