"""Servers: each engine's adapter (argv from a server configuration), the process that owns a launched server,
its container wrapper, the engines' Prometheus metrics and speculative-decoding counters, and the test servers
(the fake engine, the loopback streamer). Each adapter registers itself beside its class
(``registry.register_runtime``) and declares everything the harness knows about its engine; ``registry.get_runtime``
finds it by name.
"""

from harness.servers.deployment import deployment_server, deployment_spec
from harness.servers.process import LaunchSpec, ServerProcess, free_port, tail
from harness.servers.prometheus import MetricsSnapshot, ServerMetricNames, ServerStats, scrape, scrape_all, server_delta
from harness.servers.registry import check_engines, get_runtime, launch_spec
from harness.servers.runtime import Runtime, fixture_names, resolve_model_path

__all__ = [
    "check_engines", "deployment_server", "deployment_spec", "fixture_names", "free_port", "get_runtime",
    "launch_spec", "LaunchSpec", "MetricsSnapshot", "resolve_model_path", "Runtime", "scrape", "scrape_all",
    "server_delta", "ServerMetricNames", "ServerProcess", "ServerStats", "tail",
]
