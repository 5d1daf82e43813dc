"""Servers: each engine's adapter (argv from a server configuration), the process that owns a launched server,
its container wrapper, the deployment (routers, replicas, prefill/decode), the engines' Prometheus metrics, their
speculative-decoding counters and their expert-load collectors. Every adapter is an entry of ``runtime.RUNTIMES``
and declares everything the harness knows about its engine; ``registry.get_runtime`` finds it by name. The test
servers (the fake engine, the loopback streamer) live in ``harness_testing``, outside the product.
"""

from harness.servers.deployment import deployment_server, deployment_spec
from harness.servers.local_paths import check_interpreters, check_model_dirs
from harness.servers.process import LaunchSpec, ServerProcess, free_port, tail
from harness.servers.prometheus import MetricsSnapshot, ServerMetricNames, ServerStats, scrape, scrape_all, server_delta
from harness.servers.remote_server import RemoteServer, deployment_grants
from harness.servers.runtime import Runtime, fixture_names, resolve_model_path
from harness.servers.runtime_lookup import check_engines, get_runtime, launch_spec
from harness.servers.self_description import SelfDescription, describe

__all__ = [
    "check_engines", "check_interpreters", "check_model_dirs", "deployment_grants", "deployment_server",
    "deployment_spec", "describe",
    "fixture_names", "free_port", "get_runtime", "launch_spec", "LaunchSpec", "MetricsSnapshot", "RemoteServer",
    "resolve_model_path", "Runtime", "scrape", "scrape_all", "SelfDescription", "server_delta", "ServerMetricNames",
    "ServerProcess", "ServerStats", "tail",
]
