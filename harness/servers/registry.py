"""Runtime registry: runtime name -> adapter class, imported only when a matrix uses it.

Adapters translate a ServerConfig into one engine's exact command line; the process they describe is owned by
``harness.servers.process.ServerProcess``. Nothing here imports an engine, so ``harness plan`` stays fast.
"""

from __future__ import annotations

import importlib

from harness.plan.cells import ServerConfig
from harness.servers.process import LaunchSpec
from harness.servers.runtime import Runtime, resolve_model_path

# name -> "module:Class"; the fake server is a test instrument (client overhead, fault injection), not a default.
RUNTIMES: dict[str, str] = {
    "vllm": "harness.servers.vllm:VllmRuntime",
    "sglang": "harness.servers.sglang:SglangRuntime",
    "fake": "harness.servers.fake_runtime:FakeRuntime",
}


def get_runtime(name: str) -> Runtime:
    """The adapter for a runtime name; unknown names list the known ones."""
    try:
        module_name, _, class_name = RUNTIMES[name].partition(":")
    except KeyError:
        raise KeyError(f"unknown runtime {name!r}; known runtimes: {', '.join(sorted(RUNTIMES))}") from None
    runtime: Runtime = getattr(importlib.import_module(module_name), class_name)()
    return runtime


def launch_spec(server: ServerConfig, port: int) -> LaunchSpec:
    """The exact argv and environment that start ``server`` on ``port``, from its runtime's adapter."""
    return get_runtime(server.runtime).launch_spec(server, resolve_model_path(server), port)
