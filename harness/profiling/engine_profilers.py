"""What each engine needs so that its own ``/start_profile`` and ``/stop_profile`` drive a given profiler.

Two modes: ``nsys`` (the server runs under ``nsys profile``; the endpoints call ``cudaProfilerStart/Stop``, which
open and close nsys's capture range) and ``torch`` (the engine's torch profiler writes Chrome traces; the CPU
default). One class per runtime, looked up by runtime name in ``ENGINE_PROFILERS``.

vLLM 0.32 / 0.33 (``vllm/config/profiler.py``, ``vllm/profiler/wrapper.py``, ``entrypoints/serve/profile``):
the routes exist only when ``--profiler-config`` names a profiler (else ``/start_profile`` is 404); the directory
is fixed at launch, so per-cell files are told apart by ``profile_prefix`` in the start body. There is no
``VLLM_TORCH_PROFILER_DIR`` any more. A second start while one is active answers 409.

SGLang 0.5.23 (``srt/entrypoints/http_server.py``, ``ProfileReq``): the routes always exist; the activities and
the output directory travel in the start body; ``CUDA_PROFILER`` calls ``cudaProfilerStart`` on the base GPU's rank.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Literal

ProfileMode = Literal["nsys", "torch"]


class EngineProfiler(ABC):
    """Server flags, server environment and start-request body for one engine."""

    start_path = "/start_profile"
    stop_path = "/stop_profile"

    @abstractmethod
    def server_args(self, mode: ProfileMode, trace_dir: Path) -> list[str]:
        """Flags appended to the server's argv at launch."""

    def server_env(self, mode: ProfileMode, trace_dir: Path) -> dict[str, str]:
        """Extra environment for the server process."""
        return {}

    @abstractmethod
    def start_body(self, mode: ProfileMode, trace_dir: Path, prefix: str | None) -> dict[str, Any] | None:
        """JSON body of ``POST /start_profile`` (None: no body)."""


def vllm_torch_profiler_config(trace_dir: Path) -> dict[str, Any]:
    """vLLM's ``--profiler-config`` for the torch profiler, sized for a benchmark window.

    Activities are left to vLLM's platform default (CPU on the CPU build; CPU and CUDA on a GPU). Stacks are off:
    with them every Python frame becomes an event and a few seconds' trace grows tenfold. The front-end (API
    process) profiler is off: measured on 0.32 CPU it records an empty trace, as it runs in a side thread.
    """
    return {"profiler": "torch", "torch_profiler_dir": str(trace_dir.resolve()),
            "torch_profiler_with_stack": False, "ignore_frontend": True}


class VllmProfiler(EngineProfiler):
    _CONFIG = {"nsys": lambda _: {"profiler": "cuda"}, "torch": vllm_torch_profiler_config}

    def server_args(self, mode: ProfileMode, trace_dir: Path) -> list[str]:
        return ["--profiler-config", json.dumps(self._CONFIG[mode](trace_dir), separators=(",", ":"))]

    def start_body(self, mode: ProfileMode, trace_dir: Path, prefix: str | None) -> dict[str, Any] | None:
        # The cuda profiler has no files of its own to name; the torch traces take the prefix.
        return {"profile_prefix": prefix} if prefix and mode == "torch" else None


class SglangProfiler(EngineProfiler):
    _ACTIVITIES = {"nsys": ["CUDA_PROFILER"], "torch": ["CPU", "GPU"]}

    def server_args(self, mode: ProfileMode, trace_dir: Path) -> list[str]:
        return []

    def server_env(self, mode: ProfileMode, trace_dir: Path) -> dict[str, str]:
        return {"SGLANG_TORCH_PROFILER_DIR": str(trace_dir.resolve())} if mode == "torch" else {}

    def start_body(self, mode: ProfileMode, trace_dir: Path, prefix: str | None) -> dict[str, Any] | None:
        body: dict[str, Any] = {"activities": self._ACTIVITIES[mode]}
        if mode == "torch":
            body["output_dir"] = str(trace_dir.resolve())
            if prefix:
                body["profile_prefix"] = prefix
        return body


ENGINE_PROFILERS: dict[str, EngineProfiler] = {"vllm": VllmProfiler(), "sglang": SglangProfiler()}


def engine_profiler(runtime: str) -> EngineProfiler:
    """The profiler settings of a runtime; unknown names list the known ones."""
    try:
        return ENGINE_PROFILERS[runtime]
    except KeyError:
        raise KeyError(f"runtime {runtime!r} has no profiling support; known: "
                       f"{', '.join(sorted(ENGINE_PROFILERS))}") from None
