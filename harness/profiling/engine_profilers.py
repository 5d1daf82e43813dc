"""Which profiler settings a runtime has: its adapter's ``EngineProfiler`` (``harness.servers.profiler``).

The engine-specific flags, environment and start bodies live in each adapter (``harness.servers.vllm``,
``harness.servers.sglang``); this module only finds them for the profiling stage.
"""

from __future__ import annotations

from harness.servers.profiler import EngineProfiler, ProfileMode
from harness.servers.runtime_lookup import get_runtime, runtime_names

__all__ = ["EngineProfiler", "ProfileMode", "engine_profiler", "profiled_runtimes"]


def profiled_runtimes() -> tuple[str, ...]:
    """The runtimes whose adapter knows how to profile its engine."""
    return tuple(name for name in runtime_names() if get_runtime(name).profiler is not None)


def engine_profiler(runtime: str) -> EngineProfiler:
    """The profiler settings of a runtime; a runtime without any names the ones that have them."""
    profiler = get_runtime(runtime).profiler
    if profiler is None:
        raise KeyError(f"runtime {runtime!r} has no profiling support; known: {', '.join(profiled_runtimes())}")
    return profiler
