"""capture_window against a recorded engine (httpx.MockTransport): every way a profile can fail is data."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from harness.profiling import CaptureSpec, capture_window

BASE = "http://engine"


class Engine:
    """A vLLM-like server: answers the profile routes and writes trace files on stop."""

    def __init__(self, trace_dir: Path, start_status: int = 200, stop_status: int = 200,
                 writes: Callable[[Path, str], None] | None = None) -> None:
        self.trace_dir, self.start_status, self.stop_status = trace_dir, start_status, stop_status
        self.writes = writes if writes is not None else write_torch_traces
        self.calls: list[tuple[str, object]] = []
        self.prefix = "w"

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.calls.append((request.url.path, body))
        if request.url.path == "/start_profile":
            if self.start_status != 200:
                return httpx.Response(self.start_status, json={"detail": "Not Found"})
            self.prefix = (body or {}).get("profile_prefix", "w")
            return httpx.Response(200)
        if request.url.path == "/stop_profile":
            if self.stop_status == 200:
                self.writes(self.trace_dir, self.prefix)
            return httpx.Response(self.stop_status)
        return httpx.Response(404)

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.calls]


def write_torch_traces(directory: Path, prefix: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{prefix}_dp0_pp0_tp0_dcp0_ep0_rank0.123.pt.trace.json.gz").write_bytes(b"x" * 4096)
    (directory / f"{prefix}_dp0_pp0_tp0_dcp0_ep0_rank0.profiler_out.txt").write_text("table")


class Load:
    def __init__(self, seconds: float = 0.0, error: Exception | None = None) -> None:
        self.seconds, self.error, self.runs, self.finished = seconds, error, 0, 0

    async def __call__(self) -> None:
        self.runs += 1
        await asyncio.sleep(self.seconds)
        if self.error:
            raise self.error
        self.finished += 1


def spec(trace_dir: Path, **kw: object) -> CaptureSpec:
    return CaptureSpec.model_validate({"trace_dir": trace_dir, "poll_s": 0.01, "finalize_timeout_s": 1.0, **kw})


async def test_captures_a_torch_window_and_moves_the_files(tmp_path: Path) -> None:
    trace_dir, out = tmp_path / "server-traces", tmp_path / "profiles" / "mx" / "cell-1"
    engine, load = Engine(trace_dir), Load()
    outcome = await capture_window(BASE, "vllm", load, out, spec(trace_dir), transport=engine.transport)
    assert outcome.status == "captured" and outcome.reason is None
    assert engine.calls[0] == ("/start_profile", {"profile_prefix": "cell-1"})
    assert engine.paths == ["/start_profile", "/stop_profile"]
    assert load.finished == 1
    assert sorted(f.name for f in outcome.files) == sorted(p.name for p in out.iterdir())
    assert {f.name.split(".", 1)[1] for f in outcome.files} == {"123.pt.trace.json.gz", "profiler_out.txt"}
    assert list(trace_dir.iterdir()) == []
    assert outcome.total_bytes == 4096 + 5 and outcome.start_status == outcome.stop_status == 200
    assert outcome.window_s is not None and not outcome.window_truncated


async def test_files_left_by_earlier_windows_are_not_taken(tmp_path: Path) -> None:
    write_torch_traces(tmp_path, "older")
    engine = Engine(tmp_path)
    outcome = await capture_window(BASE, "vllm", Load(), tmp_path / "c2", spec(tmp_path), transport=engine.transport)
    assert all(f.name.startswith("c2_") for f in outcome.files) and len(outcome.files) == 2


async def test_endpoint_absent_is_missing_and_the_load_still_runs(tmp_path: Path) -> None:
    engine, load = Engine(tmp_path, start_status=404), Load()
    outcome = await capture_window(BASE, "vllm", load, tmp_path / "c", spec(tmp_path), transport=engine.transport)
    assert (outcome.status, outcome.missing_kind, outcome.start_status) == ("missing", "endpoint_absent", 404)
    assert "--profiler-config" in (outcome.reason or "")
    assert load.finished == 1 and engine.paths == ["/start_profile"]


async def test_an_unreachable_server_is_missing_not_raised(tmp_path: Path) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    load = Load()
    outcome = await capture_window(BASE, "vllm", load, tmp_path, spec(tmp_path), transport=httpx.MockTransport(refuse))
    assert outcome.missing_kind == "failed" and "ConnectError" in (outcome.reason or "")
    assert load.finished == 1


async def test_a_session_left_open_is_closed_and_started_again(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    answers = iter([409, 200])

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/start_profile" and next(answers) == 409:
            engine.calls.append(("/start_profile", None))
            return httpx.Response(409, json={"error": {"message": "A profiling session is already active."}})
        return engine(request)

    outcome = await capture_window(BASE, "vllm", Load(), tmp_path / "c", spec(tmp_path),
                                   transport=httpx.MockTransport(handler))
    assert outcome.status == "captured"
    assert engine.paths == ["/start_profile", "/stop_profile", "/start_profile", "/stop_profile"]
    assert all(f.name.startswith("c_") for f in outcome.files)  # not the stale session's files


async def test_the_window_cap_stops_the_profile_and_the_load_finishes(tmp_path: Path) -> None:
    engine, load = Engine(tmp_path), Load(seconds=0.3)
    outcome = await capture_window(BASE, "vllm", load, tmp_path / "c", spec(tmp_path, max_window_s=0.05),
                                   transport=engine.transport)
    assert outcome.status == "captured" and outcome.window_truncated
    assert outcome.window_s is not None and outcome.window_s < 0.25
    assert load.finished == 1


async def test_a_capture_over_the_size_cap_is_kept_but_marked(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    outcome = await capture_window(BASE, "vllm", Load(), tmp_path / "c", spec(tmp_path, max_size_mib=0.001),
                                   transport=engine.transport)
    assert outcome.status == "too_large" and "exceeds the 0.001 MiB cap" in (outcome.reason or "")
    assert len(list((tmp_path / "c").iterdir())) == 2


async def test_no_files_after_stop_is_missing(tmp_path: Path) -> None:
    engine = Engine(tmp_path, writes=lambda d, p: None)
    outcome = await capture_window(BASE, "vllm", Load(), tmp_path / "c", spec(tmp_path, finalize_timeout_s=0.05),
                                   transport=engine.transport)
    assert outcome.missing_kind == "no_output" and outcome.stop_status == 200


async def test_a_failing_stop_is_missing(tmp_path: Path) -> None:
    engine = Engine(tmp_path, stop_status=500)
    outcome = await capture_window(BASE, "vllm", Load(), tmp_path / "c", spec(tmp_path), transport=engine.transport)
    assert outcome.missing_kind == "failed" and outcome.stop_status == 500
    assert outcome.reason is not None and outcome.reason.startswith("stop_profile failed: HTTP 500")


async def test_the_load_error_propagates_after_the_profile_is_stopped(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    with pytest.raises(RuntimeError, match="load broke"):
        await capture_window(BASE, "vllm", Load(error=RuntimeError("load broke")), tmp_path / "c", spec(tmp_path),
                             transport=engine.transport)
    assert engine.paths == ["/start_profile", "/stop_profile"]


async def test_a_cancelled_window_still_stops_the_profile(tmp_path: Path) -> None:
    engine = Engine(tmp_path)
    task = asyncio.ensure_future(capture_window(BASE, "vllm", Load(seconds=5), tmp_path / "c", spec(tmp_path),
                                                transport=engine.transport))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert engine.paths == ["/start_profile", "/stop_profile"]


async def test_runtime_without_profiling_is_missing(tmp_path: Path) -> None:
    load = Load()
    outcome = await capture_window(BASE, "fake", load, tmp_path, spec(tmp_path))
    assert outcome.missing_kind == "unsupported_runtime" and load.finished == 1


async def test_nsys_mode_without_nsys_is_missing(tmp_path: Path) -> None:
    load = Load()
    outcome = await capture_window(BASE, "vllm", load, tmp_path, spec(tmp_path, mode="nsys",
                                                                       nsys_executable="no-such-nsys"))
    assert (outcome.missing_kind, outcome.mode) == ("nsys_missing", "nsys") and load.finished == 1


async def test_nsys_mode_collects_the_report_nsys_writes_after_stop(tmp_path: Path) -> None:
    fake_nsys = tmp_path / "bin" / "nsys"
    fake_nsys.parent.mkdir()
    fake_nsys.write_text("#!/bin/sh\nexit 0\n")
    fake_nsys.chmod(fake_nsys.stat().st_mode | stat.S_IEXEC)
    nsys_out = tmp_path / "nsys-out"

    def write_report(directory: Path, prefix: str) -> None:
        directory.mkdir(exist_ok=True)
        (directory / "profile.1.nsys-rep").write_bytes(b"r" * 100)

    engine = Engine(nsys_out, writes=write_report)
    outcome = await capture_window(BASE, "sglang", Load(), tmp_path / "cell", spec(
        nsys_out, mode="nsys", nsys_executable=os.fspath(fake_nsys)), transport=engine.transport)
    assert outcome.status == "captured" and [f.name for f in outcome.files] == ["profile.1.nsys-rep"]
    assert engine.calls[0] == ("/start_profile", {"activities": ["CUDA_PROFILER"]})


async def test_files_that_cannot_be_moved_are_missing_not_raised(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "traces")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cell's profile folder should be")
    outcome = await capture_window(BASE, "vllm", Load(), blocker, spec(tmp_path / "traces"),
                                   transport=engine.transport)
    assert outcome.missing_kind == "failed" and "collecting the profile files failed" in (outcome.reason or "")
