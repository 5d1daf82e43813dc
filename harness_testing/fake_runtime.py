"""The fake runtime: launches ``harness_testing.fake_engine`` exactly as a real engine would be launched.

A test instrument only (lifecycle, fault injection, client overhead), never what ``make bench`` measures.
Knobs such as ``--die-after-requests`` come from the matrix's ``runtimes.fake.extra_args``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness.plan.cells import ServerConfig
from harness.servers.runtime import NodeRank, PdRole, Runtime
from harness.servers.speculation_counters import VllmSpeculationCounters
from harness.servers.vllm import VLLM_METRICS, VLLM_ROUTER, VLLM_SPECULATION, vllm_router_args


class FakeRuntime(Runtime):
    name = "fake"
    module = "harness_testing.fake_engine"
    packages = ("harness",)  # the fake server ships with the harness
    server_version_patterns = ()  # it prints no version of its own
    tool_parsers: Mapping[str, str] = {}  # it parses no tool calls: a matrix names one explicitly where it must
    # the fake engine exposes vLLM's metric names
    speculation_counters = VllmSpeculationCounters(VLLM_SPECULATION)
    server_metrics = VLLM_METRICS
    shares_harness_env = True
    machine_bound = False

    def check(self, server: ServerConfig, source: str) -> None:
        """The fake server accepts any configuration: no recipe rule applies to it."""

    def engine_args(self, server: ServerConfig, model_path: str, host: str, port: int) -> list[str]:
        args = ["--host", host, "--port", str(port), "--seed", str(server.settings.seed)]
        if not server.speculation.is_off:
            args += ["--speculative-k", str(getattr(server.speculation.root, "k", 1))]
        return [*args, *server.runtime_env.extra_args]

    multi_node_since = "0"
    router_module = VLLM_ROUTER

    def router_args(self, server: ServerConfig, port: int, metrics_port: int, *, workers: Sequence[str] = (),
                    prefill: Sequence[tuple[str, int | None]] = (), decode: Sequence[str] = ()) -> list[str]:
        """The real vllm-router in front of fake engines: the deployment's plumbing without an engine."""
        return vllm_router_args(server, port, metrics_port, workers, prefill, decode)

    def pd_args(self, server: ServerConfig, role: PdRole, next_port: Callable[[], int],
                scratch: Path) -> tuple[list[str], dict[str, str], int | None]:
        config = {"kv_connector": "fake", "kv_role": "kv_producer" if role == "prefill" else "kv_consumer"}
        return ["--kv-transfer-config", json.dumps(config)], {}, None

    def node_args(self, server: ServerConfig, node: NodeRank) -> list[str]:
        """vLLM's --nnodes form, so the multi-node plumbing (srun steps, reaping) is tested without an engine."""
        args = ["--nnodes", str(node.nodes), "--node-rank", str(node.rank), "--master-addr", node.head_addr,
                "--master-port", str(node.rendezvous_port)]
        return [*args, "--headless"] if node.rank else args
