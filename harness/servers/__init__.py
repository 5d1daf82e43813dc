"""Servers: each engine's adapter (argv from a server configuration), the process that owns a launched server,
its container wrapper, the engines' Prometheus metrics and speculative-decoding counters, and the test servers
(the fake engine, the loopback streamer). Each adapter registers itself beside its class
(``registry.register_runtime``) and declares everything the harness knows about its engine; ``registry.get_runtime``
finds it by name.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.servers.deployment import deployment_server, deployment_spec
    from harness.servers.process import LaunchSpec, ServerProcess, free_port, tail
    from harness.servers.prometheus import (
        MetricsSnapshot,
        ServerMetricNames,
        ServerStats,
        scrape,
        scrape_all,
        server_delta,
    )
    from harness.servers.registry import check_engines, get_runtime, launch_spec
    from harness.servers.runtime import Runtime, fixture_names, resolve_model_path

__all__ = [
    "check_engines", "deployment_server", "deployment_spec", "fixture_names", "free_port", "get_runtime",
    "launch_spec", "LaunchSpec", "MetricsSnapshot", "resolve_model_path", "Runtime", "scrape", "scrape_all",
    "server_delta", "ServerMetricNames", "ServerProcess", "ServerStats", "tail",
]
_SOURCES = {
    "deployment_server": "deployment", "deployment_spec": "deployment", "LaunchSpec": "process",
    "ServerProcess": "process", "free_port": "process", "tail": "process", "MetricsSnapshot": "prometheus",
    "ServerMetricNames": "prometheus", "ServerStats": "prometheus", "scrape": "prometheus",
    "scrape_all": "prometheus", "server_delta": "prometheus", "check_engines": "registry",
    "get_runtime": "registry", "launch_spec": "registry", "Runtime": "runtime", "fixture_names": "runtime",
    "resolve_model_path": "runtime",
}


def __getattr__(name: str) -> Any:
    """The names above, imported on first use: the fake engine's server runs as ``python -m
    harness.servers.fake``, which imports this package first, and eager imports of the adapters, the deployment
    and httpx cost each of its launches 0.4 s it does not use."""
    if name in _SOURCES:
        return getattr(import_module(f"harness.servers.{_SOURCES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
