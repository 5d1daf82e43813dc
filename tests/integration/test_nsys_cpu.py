"""Nsight Systems on a real process (the nsys that `make setup` unpacks into build/nsys): a CPU window captured and
summarised, a capture cancelled mid-window, and a collector that does not exit in time; after each, no nsys
process, no process of the capture and none of its temporary files is left."""

from __future__ import annotations

import asyncio
import fcntl
import json
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import pytest

from harness.profiling import (
    CpuProfile,
    CpuWindow,
    ProfiledServer,
    ProfileOutcome,
    ProfileSummary,
    capture_cpu_window,
    find_nsys,
    leftover_pids,
    render_summary_md,
    summarize_cpu_capture,
)
from harness.profiling.nsys_reaper import TEMP_FILES
from harness.servers import LaunchSpec, free_port

from tests.support import cli

pytestmark = pytest.mark.nsys


@pytest.fixture(autouse=True)
def one_nsys_test_at_a_time() -> Iterator[None]:
    """The checks lane's workers take turns here. Each test asserts that no nsys process started since it began is
    left, which a capture another worker started meanwhile would break (the harness's own lock,
    ``one_capture_at_a_time``, spans one capture, not a test's checks after it)."""
    with (Path(tempfile.gettempdir()) / "harness-nsys-tests.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="module", autouse=True)
def nsys() -> str:
    found = find_nsys()
    assert found, "no nsys on PATH and none in build/nsys: run `make setup` (scripts/install-nsys.sh)"
    return found


def server(tmp_path: Path) -> tuple[LaunchSpec, int]:
    """A small HTTP server, in Python as the engines are, that answers on / (its readiness)."""
    port = free_port()
    argv = (sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(tmp_path))
    return LaunchSpec(argv=argv, health_path="/"), port


def load(port: int) -> Callable[[float], Awaitable[None]]:
    async def run(seconds: float) -> None:
        stop = time.monotonic() + seconds
        async with httpx.AsyncClient(timeout=5) as client:
            while time.monotonic() < stop:
                try:
                    await client.get(f"http://127.0.0.1:{port}/")
                except httpx.HTTPError:
                    return
    return run


def assert_nothing_left(since: float, port: int) -> None:
    assert leftover_pids(since) == [], "an nsys process outlived its capture"
    made = [p for folder, pattern in TEMP_FILES for p in folder.glob(pattern) if p.stat().st_mtime >= since - 1]
    assert made == [], f"temporary files left: {made}"
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0, "the profiled server is still listening"


async def test_a_window_of_a_server_under_load_is_captured_and_summarised(tmp_path: Path) -> None:
    # nsys 2022.4 on AMD now and then records a window without CPU samples (seen once in seven captures of this
    # 4 s window, OS-runtime trace intact), or hangs after it (about 1 in 5; two in a row in a fresh clone's make
    # test, 2026-11-29): one of three captures must then have them
    for attempt in range(3):
        launch, port = server(tmp_path)
        since = time.time()
        profiled = ProfiledServer(launch, "127.0.0.1", port)
        run = await capture_cpu_window(profiled, tmp_path / f"out{attempt}", CpuWindow(
            delay_s=3, window_s=4, startup_timeout_s=60), load(port))
        assert_nothing_left(since, port)
        if run.hung:
            continue
        assert run.outcome.captured, run.outcome.reason
        assert run.exit_code == 143  # nsys ended the server at the window's end, and exits with its code
        profile = await summarize_cpu_capture(run, tmp_path / f"out{attempt}")
        assert profile.summarize_error is None
        assert {"poll", "accept4"} & {row.name for row in profile.os_calls}  # waiting for and taking requests
        if profile.samples > 0:
            assert profile.functions
            return
    pytest.fail("three captures in a row without CPU samples (or hung)")


async def test_a_capture_cancelled_mid_window_leaves_nothing_behind(tmp_path: Path) -> None:
    launch, port = server(tmp_path)
    window = CpuWindow(delay_s=2, window_s=30, startup_timeout_s=60)
    since, started = time.time(), time.monotonic()
    capture = asyncio.ensure_future(capture_cpu_window(ProfiledServer(launch, "127.0.0.1", port), tmp_path / "out",
                                                       window, load(port)))
    while time.monotonic() < started + window.delay_s + 3:  # into the window (the server is ready in about 1 s)
        assert not capture.done(), capture.result() if capture.done() else None
        await asyncio.sleep(0.2)
    assert leftover_pids(since), "the capture should be running"
    capture.cancel()
    with pytest.raises(asyncio.CancelledError):
        await capture
    assert_nothing_left(since, port)


async def test_a_collector_that_does_not_exit_in_time_is_killed_and_the_profile_says_why(tmp_path: Path) -> None:
    launch, port = server(tmp_path)
    since = time.time()
    # no time to write the report after the window: the watchdog finds nsys still running, as when it hangs
    run = await capture_cpu_window(ProfiledServer(launch, "127.0.0.1", port), tmp_path / "out", CpuWindow(
        delay_s=2, window_s=2, finalize_s=0.01, startup_timeout_s=60), load(port))
    assert run.hung and not run.outcome.captured
    assert "did not exit within 0.01 s of the window's end" in str(run.outcome.reason)
    assert_nothing_left(since, port)
    text = render_summary_md(ProfileSummary(outcome=ProfileOutcome.missing("vllm", "torch", "no_output", "n/a"),
                                            nsys_cpu=CpuProfile(run=run)))
    assert "**Profile failed**: nsys did not exit" in text



PROFILED_MATRIX = """
name: nsysfake
models:
  m: {{id: "{model}"}}
workloads:
  w: {{kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1}}
axes:
  runtime: [fake]
  concurrency: [1, 2]
server: {{startup_timeout_s: 60}}
profile: {{cells: [{{concurrency: 1}}], requests: 4, nsys_cells: [{{concurrency: 1}}], nsys_window_s: 2,
          nsys_delay_floor_s: 30}}
"""


def test_a_run_captures_its_nsys_cell_in_a_launch_of_its_own(write_matrix: Callable[..., Path],
                                                             tiny_tokenizer_dir: Path, tmp_path: Path) -> None:
    """Through `harness run` (the fake engine stands in for vLLM, which the real-engine tier serves): the cell's
    summary carries the capture beside its (here missing: the fake engine has no profiler) engine window."""
    matrix, out = write_matrix(PROFILED_MATRIX.format(model=tiny_tokenizer_dir)), tmp_path / "reports"
    since = time.time()
    done = cli.harness("run", matrix, "--out", out)
    assert done.returncode == 0, done.stderr[-3000:]
    (summary,) = (tmp_path / "profiles" / "nsysfake").glob("*/summary.json")
    capture = json.loads(summary.read_text())["nsys_cpu"]
    run = capture["run"]
    if run["hung"]:
        pytest.xfail("nsys hung after the window twice, the retry without CPU sampling too")
    assert run["outcome"]["status"] == "captured" and capture["os_calls"]
    if run["window"]["sample"]:
        assert capture["samples"] > 0
    else:  # the retry after a sampled capture hung: OS calls and NVTX only, and the summary says why
        assert capture["samples"] == 0 and "hung after its window" in run["note"]
    assert "#### Nsight Systems" in (summary.parent / "summary.md").read_text()
    assert leftover_pids(since) == []
