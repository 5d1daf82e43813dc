"""What an engine's adapter says about profiling it: the flags, environment and ``/start_profile`` body that let
the engine's own profiling endpoints drive a given profiler.

Two modes: ``nsys`` (the server runs under ``nsys profile``; the endpoints call ``cudaProfilerStart/Stop``, which
open and close nsys's capture range) and ``torch`` (the engine's torch profiler writes Chrome traces; the CPU
default). Each adapter (``harness.servers.vllm``, ``...sglang``) holds its engine's ``EngineProfiler``; the
profiling stage (``harness.profiling``) drives the window.
"""

from __future__ import annotations

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
