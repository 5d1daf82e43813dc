"""A deployment of several servers behind one endpoint (``axes.topology``): R colocated replicas, or N prefill and
M decode servers joined by the engine's KV transfer, each with its own port and log, and the engine's own router
in front (``vllm-router``, ``sglang-router``: from the package index, started as a process like the servers).

The runtime adapter writes each part's flags (``pd_args``) and the router's (``router_args``); this module lays
out the parts (names, ports, per-part scratch directories) and returns one ``CompositeServer``: parts first, all
at once, each ready on its own ``/health``; then the router, ready on its ``/health``; the engines' metrics read
from the parts; reaped whole on every exit path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.config.topology import Disaggregated, Replicas
from harness.plan.cells import ServerConfig
from harness.servers.composite import CompositeServer
from harness.servers.process import LaunchSpec, ServerProcess
from harness.servers.runtime import PdRole, resolve_model_path
from harness.servers.runtime_lookup import get_runtime


@dataclass(frozen=True, slots=True)
class Part:
    """One server of a deployment: its name (its log is ``<name>.log``), launch and port."""

    name: str
    spec: LaunchSpec
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass(frozen=True, slots=True)
class DeploymentSpec:
    parts: tuple[Part, ...]
    router: LaunchSpec


def deployment_spec(server: ServerConfig, port: int, next_port: Callable[[], int], scratch: Path) -> DeploymentSpec:
    """Every part's exact argv and the router's, for a deployment whose router listens on ``port``.

    ``next_port`` hands out free ports (each part, the router's metrics, KV transfer side channels); ``scratch``
    is a directory the deployment may use for KV transfer through files (vLLM's ExampleConnector).
    """
    runtime = get_runtime(server.runtime)
    model_path = resolve_model_path(server)
    topology = server.topology.root
    parts: list[Part] = []
    if isinstance(topology, Replicas):
        for index in range(topology.replicas):
            part_port = next_port()
            parts.append(Part(f"replica{index}", runtime.launch_spec(server, model_path, part_port), part_port))
        router = runtime.router_args(server, port, next_port(), workers=[p.url for p in parts])
        return DeploymentSpec(tuple(parts), LaunchSpec(argv=tuple(router), health_path=runtime.router_ready_path))
    assert isinstance(topology, Disaggregated), topology
    prefill: list[tuple[str, int | None]] = []
    roles: list[tuple[PdRole, int]] = [("prefill", i) for i in range(topology.prefill)]
    roles += [("decode", i) for i in range(topology.decode)]
    for role, index in roles:
        part_port = next_port()
        base = runtime.launch_spec(server, model_path, part_port)
        extra, env, bootstrap = runtime.pd_args(server, role, next_port, scratch)
        spec = LaunchSpec(argv=(*base.argv, *extra), env={**base.env, **env})
        part = Part(f"{role}{index}", spec, part_port)
        parts.append(part)
        if role == "prefill":
            prefill.append((part.url, bootstrap))
    decode = [p.url for p in parts if p.name.startswith("decode")]
    router = runtime.router_args(server, port, next_port(), prefill=prefill, decode=decode)
    return DeploymentSpec(tuple(parts), LaunchSpec(argv=tuple(router), health_path=runtime.router_ready_path))


def deployment_server(server: ServerConfig, deployment: DeploymentSpec, port: int, log_path: Path) -> CompositeServer:
    """The deployment as one server: its parts' logs beside the router's (``log_path``)."""
    timeout, host = server.settings.startup_timeout_s, server.settings.host
    parts = [ServerProcess(p.spec, "127.0.0.1", p.port, log_path.with_name(f"{p.name}.log"), timeout)
             for p in deployment.parts]
    return CompositeServer(deployment.router, parts, host, port, log_path, timeout, metrics_from_parts=True)
