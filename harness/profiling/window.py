"""One capture window on a running server: ``/start_profile``, the caller's load, ``/stop_profile``, collect files.

The window is bounded twice: in time (``max_window_s``: the profile is stopped then even if the load goes on,
and the load finishes unprofiled) and in size (``max_size_mib``: a capture larger than that is kept but marked
``too_large`` and not summarized). A profile that cannot be had (runtime without profiling, nsys absent,
endpoint 404, start or stop failing, no files written) is returned as ``missing`` with the reason; the load runs
in every case, so the cell's measurement never depends on its profile. Exceptions raised by the load itself
are the caller's and propagate, after the profile has been stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from pydantic import BaseModel, ConfigDict, Field

from harness.endpoint_access import http_client
from harness.profiling.engine_profilers import EngineProfiler, ProfileMode, engine_profiler
from harness.profiling.nsys import REPORT_SUFFIX, find_nsys
from harness.profiling.outcome import ProfileFile, ProfileOutcome
from harness.profiling.torch_trace import TRACE_GLOB

# The files that mean "the profile is written" per mode, and companions moved along with them.
_PRIMARY: dict[ProfileMode, tuple[str, ...]] = {"torch": (TRACE_GLOB,), "nsys": (f"*{REPORT_SUFFIX}",)}
_COMPANIONS: dict[ProfileMode, tuple[str, ...]] = {"torch": ("*.profiler_out.txt",), "nsys": ()}


class CaptureSpec(BaseModel):
    """How one window is captured; the defaults suit the CPU default's tiny models."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: ProfileMode = "torch"
    trace_dir: Path | None = Field(None, description="where the engine (or nsys -o) writes; default: out_dir")
    prefix: str | None = Field(None, description="per-window file prefix (vLLM profile_prefix); default: out_dir name")
    max_window_s: float = Field(30.0, gt=0, description="the profile is stopped after this long, load or not")
    max_size_mib: float = Field(512.0, gt=0, description="a capture larger than this is marked too_large")
    finalize_timeout_s: float = Field(120.0, ge=0, description="wait this long for files after stop")
    poll_s: float = Field(0.5, gt=0)
    http_timeout_s: float = Field(300.0, gt=0, description="stop_profile can take seconds while traces are written")
    nsys_executable: str = "nsys"


def _prefix(spec: CaptureSpec, out_dir: Path) -> str:
    # vLLM accepts 1-128 ASCII letters, digits, '.', '_', '-', starting with a letter or digit.
    raw = spec.prefix if spec.prefix is not None else out_dir.name
    return re.sub(r"[^A-Za-z0-9._-]", "-", raw).lstrip("._-")[:128] or "profile"


def _snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    if not directory.is_dir():
        return {}
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in directory.iterdir() if p.is_file()}


def _new_files(directory: Path, before: dict[str, tuple[int, int]], patterns: tuple[str, ...]) -> list[Path]:
    found = {p for pattern in patterns for p in directory.glob(pattern) if p.is_file()} if directory.is_dir() else set()
    return sorted(p for p in found if before.get(p.name) != (p.stat().st_mtime_ns, p.stat().st_size))


async def _wait_for_files(directory: Path, before: dict[str, tuple[int, int]], spec: CaptureSpec) -> list[Path]:
    """New primary files once their sizes hold still for one poll (nsys writes its report after the stop)."""
    deadline = time.monotonic() + spec.finalize_timeout_s
    last: dict[Path, int] | None = None
    while True:
        current = {p: p.stat().st_size for p in _new_files(directory, before, _PRIMARY[spec.mode])}
        if current and current == last:
            return _new_files(directory, before, _PRIMARY[spec.mode] + _COMPANIONS[spec.mode])
        if time.monotonic() >= deadline:
            return _new_files(directory, before, _PRIMARY[spec.mode] + _COMPANIONS[spec.mode]) if current else []
        last = current
        await asyncio.sleep(spec.poll_s)


def _describe(response: httpx.Response) -> str:
    return f"HTTP {response.status_code} {response.text.strip()[:200]}".strip()


async def _post(client: httpx.AsyncClient, path: str, body: dict[str, object] | None) -> httpx.Response | str:
    """The response, or the transport error as text (a profile failure is data)."""
    try:
        return await client.post(path, json=body) if body is not None else await client.post(path)
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"


async def _start(client: httpx.AsyncClient, engine: EngineProfiler, body: dict[str, object] | None,
                 ) -> httpx.Response | str:
    response = await _post(client, engine.start_path, body)
    if isinstance(response, httpx.Response) and response.status_code == 409:
        # A session left open (an earlier window cut short): close it and try once more.
        await _post(client, engine.stop_path, None)
        response = await _post(client, engine.start_path, body)
    return response


async def capture_window(base_url: str, runtime: str, run_load: Callable[[], Awaitable[None]], out_dir: Path,
                         spec: CaptureSpec | None = None, *,
                         transport: httpx.AsyncBaseTransport | None = None) -> ProfileOutcome:
    """Profile the server at ``base_url`` while ``run_load()`` runs; files end up in ``out_dir``."""
    spec = spec or CaptureSpec()
    try:
        engine = engine_profiler(runtime)
    except KeyError as exc:
        await run_load()
        return ProfileOutcome.missing(runtime, spec.mode, "unsupported_runtime", str(exc.args[0]))
    if spec.mode == "nsys" and find_nsys(spec.nsys_executable) is None:
        await run_load()
        return ProfileOutcome.missing(runtime, spec.mode, "nsys_missing",
                                      f"{spec.nsys_executable!r} not found on PATH: install Nsight Systems")
    trace_dir = spec.trace_dir or out_dir
    body = engine.start_body(spec.mode, trace_dir, _prefix(spec, out_dir))
    async with http_client(base_url, base_url=base_url, transport=transport, timeout=spec.http_timeout_s) as client:
        started = await _start(client, engine, body)
        if isinstance(started, str) or started.status_code >= 300:
            await run_load()
            return _start_failed(runtime, spec.mode, started)
        # Engines write on stop: whatever is already there (earlier windows, a stale session) is not ours.
        try:
            before = _snapshot(trace_dir)
        except OSError:
            before = {}
        window_start = time.monotonic()
        load = asyncio.ensure_future(run_load())
        try:
            done, _ = await asyncio.wait({load}, timeout=spec.max_window_s)
        except BaseException:
            # Cancelled: the load goes with the cell, but the engine's profiling session must still be closed.
            load.cancel()
            with contextlib.suppress(Exception):
                await asyncio.shield(_post(client, engine.stop_path, None))
            raise
        window_s = time.monotonic() - window_start
        stopped = await _post(client, engine.stop_path, None)
        stop_s = time.monotonic() - window_start - window_s
        await load  # past the window the load finishes unprofiled; its own exception, if any, is the caller's
    timing: dict[str, object] = {"window_s": round(window_s, 3), "stop_s": round(stop_s, 3),
                                 "window_truncated": not done, "start_status": started.status_code}
    if isinstance(stopped, str) or stopped.status_code >= 300:
        reason = stopped if isinstance(stopped, str) else _describe(stopped)
        return ProfileOutcome.missing(runtime, spec.mode, "failed", f"stop_profile failed: {reason}", **timing,
                                      stop_status=None if isinstance(stopped, str) else stopped.status_code)
    timing["stop_status"] = stopped.status_code
    try:
        files = await _wait_for_files(trace_dir, before, spec)
        if not files:
            return ProfileOutcome.missing(runtime, spec.mode, "no_output",
                                          f"the engine accepted start/stop but wrote no {_PRIMARY[spec.mode][0]} "
                                          f"into {trace_dir} within {spec.finalize_timeout_s:g} s", **timing)
        return _collect(runtime, spec, files, out_dir, timing)
    except OSError as exc:
        return ProfileOutcome.missing(runtime, spec.mode, "failed", f"collecting the profile files failed: {exc}",
                                      **timing)


def _start_failed(runtime: str, mode: ProfileMode, started: httpx.Response | str) -> ProfileOutcome:
    if isinstance(started, str):
        return ProfileOutcome.missing(runtime, mode, "failed", f"start_profile failed: {started}")
    if started.status_code == 404:
        return ProfileOutcome.missing(runtime, mode, "endpoint_absent",
                                      "/start_profile is absent (404): the server was launched without profiling "
                                      "enabled (vLLM: --profiler-config)", start_status=404)
    return ProfileOutcome.missing(runtime, mode, "failed", f"start_profile failed: {_describe(started)}",
                                  start_status=started.status_code)


def _collect(runtime: str, spec: CaptureSpec, files: list[Path], out_dir: Path,
             timing: dict[str, object]) -> ProfileOutcome:
    out_dir.mkdir(parents=True, exist_ok=True)
    kept = []
    for path in files:
        target = out_dir / path.name
        if path.resolve() != target.resolve():
            shutil.move(path, target)
        kept.append(ProfileFile(name=target.name, bytes=target.stat().st_size))
    total = sum(f.bytes for f in kept)
    cap = spec.max_size_mib * 2**20
    if total > cap:
        return ProfileOutcome.model_validate({
            "status": "too_large", "runtime": runtime, "mode": spec.mode, "files": tuple(kept), "total_bytes": total,
            "reason": f"{total / 2**20:.1f} MiB exceeds the {spec.max_size_mib:g} MiB cap: kept but not summarized; "
                      f"shorten the window (max_window_s) or raise the cap", **timing})
    return ProfileOutcome.model_validate({"status": "captured", "runtime": runtime, "mode": spec.mode,
                                          "files": tuple(kept), "total_bytes": total, **timing})
