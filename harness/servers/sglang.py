"""SGLang adapter: a ServerConfig as the exact flags of ``python -m sglang.launch_server`` (SGLang 0.5.23).

What differs from vLLM, read from SGLang's ``srt/arg_groups`` (the unit tests parse every argv with its ``ServerArgs``):

- ``--tp-size`` counts every rank of the replica; attention DP is ``--attn-dp-size`` groups inside it and EP is
  ``--ep-size``. The harness's ``{tp, dp, ep}`` (attention TP per DP group, DP groups, experts spread over EP
  ranks) therefore becomes ``--tp-size tp*dp --attn-dp-size dp --ep-size ep``, the same layout vLLM serves with
  ``-tp tp -dp dp``. ``--dp-size`` (whole replicas behind SGLang's router) is not used: one replica per server.
- MTP is ``NEXTN``; a separate draft model is ``STANDALONE``; a chain of k drafts verifies k + 1 tokens.
- ``--max-running-requests`` is always set: with any speculative algorithm SGLang silently caps it at 48.
- ``/metrics`` exists only with ``--enable-metrics``; the KV dtype is ``fp8_e4m3``, never plain ``fp8``.
- SGLang never runs in the harness's environment (it pins its own torch): a matrix names its interpreter or image.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.config.hardware import CpuHardware, GpuHardware
from harness.config.topology import Disaggregated
from harness.plan.cells import ServerConfig
from harness.plan.findings import Finding, ModelFacts
from harness.servers.engine_reveal import reveal_sglang
from harness.servers.expert_load_collectors import SglangExpertLoad
from harness.servers.profiler import EngineProfiler, ProfileMode
from harness.servers.prometheus import ServerMetricNames
from harness.servers.runtime import PLAIN_DTYPES, NodeRank, PdRole, Runtime, precision_args, resolve_checkpoint
from harness.servers.sglang_cpu import CPU_CAVEAT, CPU_LAUNCHER, cpu_args, cpu_env, cpu_findings
from harness.servers.speculation_counters import SglangSpeculationCounters

_KV_DTYPE = {"auto": "auto", "bf16": "bf16", "fp8": "fp8_e4m3"}
QUANTIZATION = {"fp8": "fp8", "fp4": "modelopt_fp4", "mxfp4": "mxfp4"}
_ONLINE_QUANT = frozenset({"fp8"})
ALGORITHM = {"mtp": "NEXTN", "eagle": "EAGLE", "eagle3": "EAGLE3", "draft_model": "STANDALONE", "ngram": "NGRAM"}
# Measured on a 2-core AVX-512 (no AMX) machine without a GPU: `pip install sglang==0.5.23` in its own venv, then
# `python -m sglang.launch_server --device cpu --model-path build/fixtures/tiny-qwen3-moe ...`, with and without
# SGLANG_USE_CPU_ENGINE=1.
# All-to-all backends with which SGLang silently resets --ep-size to --tp-size (arg_groups/overrides.py).
EP_SPANNING_A2A = frozenset({"megamoe", "deepep", "deepep_v2", "mooncake", "nixl", "ascend_fuseep", "flashinfer",
                             "flashinfer_megamoe", "mori", "pplx"})


SGLANG_METRICS = ServerMetricNames(
    ttft="sglang:time_to_first_token_seconds", tpot="sglang:request_time_per_output_token_seconds",
    itl="sglang:inter_token_latency_seconds", e2el="sglang:e2e_request_latency_seconds",
    queue="sglang:queue_time_seconds",
    # SGLang counts cached prompt tokens, not lookups: every prompt token is a lookup of the radix cache
    prefix_queries="sglang:prompt_tokens", prefix_hits="sglang:cached_tokens",
    counters=("sglang:prompt_tokens", "sglang:generation_tokens", "sglang:num_requests"))
"""SGLang's own histograms and counters (``srt/metrics/collector.py``, 0.5.23)."""


def _tree(speculation: Any) -> list[str]:
    args = ["--speculative-num-steps", str(speculation.k), "--speculative-eagle-topk", str(speculation.top_k),
            "--speculative-num-draft-tokens", str(speculation.verify_tokens)]
    if getattr(speculation, "draft_model", None):
        args = ["--speculative-draft-model-path", resolve_checkpoint(speculation.draft_model), *args]
    return args


def _ngram(speculation: Any) -> list[str]:
    # A chain of k proposals, as vLLM's ngram drafts: breadth 1, k + 1 tokens verified with the root. (vLLM's
    # prompt_lookup_min/max have no SGLang counterpart; SGLang matches up to --speculative-ngram-max-trie-depth.)
    return ["--speculative-num-draft-tokens", str(speculation.k + 1), "--speculative-ngram-max-bfs-breadth", "1"]


SPECULATIVE_ARGS: dict[str, Callable[[Any], list[str]]] = {
    "mtp": _tree, "eagle": _tree, "eagle3": _tree, "draft_model": _tree, "ngram": _ngram,
}


# SGLang 0.5.23 (``srt/entrypoints/http_server.py``, ``ProfileReq``): the routes always exist; the activities and the
# output directory travel in the start body; ``CUDA_PROFILER`` calls ``cudaProfilerStart`` on the base GPU's rank.
# SGLang records Python stacks and input shapes unless the body says no (``tokenizer_control_mixin.start_profile``):
# the torch window asks for neither, as vLLM's (``vllm_torch_profiler_config``), so both engines' operator tables
# come from the same kind of trace; with stacks every Python frame is a parent event, and SGLang spent about a
# minute writing a 4-request window's trace after stop (2026-11-27).
class SglangProfiler(EngineProfiler):
    _ACTIVITIES = {"nsys": ["CUDA_PROFILER"], "torch": ["CPU", "GPU"]}

    def server_args(self, mode: ProfileMode, trace_dir: Path) -> list[str]:
        return []

    def server_env(self, mode: ProfileMode, trace_dir: Path) -> dict[str, str]:
        return {"SGLANG_TORCH_PROFILER_DIR": str(trace_dir.resolve())} if mode == "torch" else {}

    def start_body(self, mode: ProfileMode, trace_dir: Path, prefix: str | None) -> dict[str, Any] | None:
        body: dict[str, Any] = {"activities": self._ACTIVITIES[mode]}
        if mode == "torch":
            body.update(output_dir=str(trace_dir.resolve()), with_stack=False, record_shapes=False)
            if prefix:
                body["profile_prefix"] = prefix
        return body


TRANSFER_BACKENDS = ("mooncake", "mooncake_tcp", "nixl", "mori", "ascend")
"""SGLang 0.5.23's --disaggregation-transfer-backend choices that pair a prefill with a decode server (``fake`` is
decode-only: arg_groups/pd_disaggregation_hook.py)."""


SGLANG_TOOL_PARSERS = {
    "deepseek-v3": "deepseekv3", "deepseek-v31": "deepseekv31", "deepseek-v32": "deepseekv32",
    # Qwen3 (and the project's fixtures) emit Hermes-style <tool_call>{json}</tool_call>: SGLang calls it qwen
    # (qwen25 and glm45 are deprecated aliases of qwen and glm, rewritten with a warning: arg_groups/serving_hook.py)
    "qwen3": "qwen", "qwen3-coder": "qwen3_coder", "gpt-oss": "gpt-oss", "kimi-k2": "kimi_k2", "glm45": "glm",
    "llama3": "llama3",
}
"""Model family -> SGLang's tool-call parser, as ``srt/function_call/parser_names.py`` (0.5.23) lists it (unit tests
check them there and in ``FunctionCallParser.ToolCallParserEnum``, and that none is deprecated)."""


QUIET_STOP_ENV = {"SGLANG_PYSPY_DUMP_BEFORE_CRASH": "0", "SGLANG_CUDA_COREDUMP_BEFORE_CRASH": "0"}
"""The harness stops a server by SIGTERM to its process group; SGLang 0.5.23 sees its scheduler end on that signal as
a crash and, by default, sleeps 5 s "to let GPU activity settle" before a py-spy dump (60 s more for a CUDA core
dump on a GPU) ahead of exiting (``TokenizerManager.dump_requests_before_crash``): 5-6 s per stop on the CPU,
2026-11-27. A matrix that wants the dumps sets them back in ``runtimes.sglang.env``."""


class SglangRuntime(Runtime):
    name = "sglang"
    revealer = staticmethod(reveal_sglang)
    module = "sglang.launch_server"
    packages = ("sglang",)
    # SGLang 0.5.23's server logs no version line (only the `sglang version` command prints one); the lock records
    # the installed package's version instead (`packages`)
    server_version_patterns = ()
    tool_parsers = SGLANG_TOOL_PARSERS
    speculation_counters = SglangSpeculationCounters(generated="sglang:generation_tokens",
                                                     verify_calls="sglang:spec_verify_calls")
    server_metrics = SGLANG_METRICS
    profiler = SglangProfiler()
    expert_load = SglangExpertLoad()
    shares_harness_env = False
    cpu_caveat = CPU_CAVEAT
    # no floor past the readiness margin: SGLang's windows that opened 47-55 s after launch (readiness 38-46 s)
    # completed in 3 of 3 captures on their first, sampled attempt, and one at 44 s hung and was captured by the
    # unsampled retry (2026-11-27, docs/cpu-engine.md); vLLM hung in 5 of 5 below 110 s
    nsys_cpu_floor_s = 1

    def findings(self, server: ServerConfig, facts: ModelFacts) -> list[Finding]:
        speculation, weights, par = server.speculation.root, server.precision.weights, server.parallel
        speculation_key = f"axes.speculation ({server.label})"
        found = []
        if isinstance(server.hardware, CpuHardware):
            found += cpu_findings(server)
        if not speculation.is_off and speculation.method not in ALGORITHM:
            found.append(Finding.skip("sglang-method", speculation_key,
                                      f"SGLang has no {speculation.method} speculation",
                                      f"exclude {{runtime: sglang, speculation: {speculation.method}}}"))
        draft_tp = getattr(speculation, "draft_tp", None)
        if draft_tp not in (None, par.world_size):
            found.append(Finding.skip("sglang-draft-tp", speculation_key, "SGLang runs the drafter at the target's TP "
                                      f"({par.world_size}); draft_tp={draft_tp} cannot be expressed",
                                      "drop draft_tp for SGLang"))
        if par.dp > 1 and speculation.method in ("ngram", "draft_model"):
            found.append(Finding.skip("sglang-dp-attention-spec", speculation_key,
                                      f"SGLang's {ALGORITHM[speculation.method]} "
                                      "speculation does not support DP attention (arg_groups/speculative_hook.py)",
                                      "use dp: 1 for this method on SGLang"))
        a2a = server.runtime_env.moe_a2a_backend
        if a2a in EP_SPANNING_A2A and par.ep not in (1, par.world_size):
            found.append(Finding.skip("sglang-a2a-ep", f"axes.parallel ({server.label})",
                                      f"with --moe-a2a-backend {a2a} SGLang resets ep={par.ep} to the "
                                      f"{par.world_size} ranks of --tp-size, silently",
                                      f"use ep: {par.world_size} with {a2a}, or no moe_a2a_backend"))
        topology = server.topology.root
        on_gpu = not isinstance(server.hardware, CpuHardware)  # on a CPU every P/D server is skipped (sglang_cpu)
        connector = getattr(topology, "connector", None) or "mooncake"
        if on_gpu and isinstance(topology, Disaggregated) and connector not in TRANSFER_BACKENDS:
            found.append(Finding.error(
                "sglang-transfer-backend", f"axes.topology ({server.label})",
                f"SGLang cannot pair prefill and decode servers with {topology.connector!r}"
                + (" (its fake backend is decode-only: the prefill server refuses it)"
                   if topology.connector == "fake" else ""),
                f"use connector: one of {', '.join(TRANSFER_BACKENDS)}"))
        if weights not in PLAIN_DTYPES and weights not in _ONLINE_QUANT and weights not in server.model.checkpoints:
            found.append(Finding.error(
                "sglang-checkpoint", f"models.{server.model_name}.checkpoints.{weights}",
                f"SGLang cannot quantize to {weights} at load time",
                f"give a pre-quantized checkpoint under models.{server.model_name}.checkpoints"))
        return found

    def engine_args(self, server: ServerConfig, model_path: str, host: str, port: int) -> list[str]:
        par, settings = server.parallel, server.settings
        args = ["--model-path", model_path, "--served-model-name", self.served_model_name(server),
                "--host", host, "--port", str(port),
                *precision_args(server, _KV_DTYPE, QUANTIZATION),
                "--tp-size", str(par.world_size)]
        if par.dp > 1:
            args += ["--attn-dp-size", str(par.dp)]
        if par.ep > 1:
            args += ["--ep-size", str(par.ep)]
            if server.runtime_env.moe_a2a_backend:
                args += ["--moe-a2a-backend", server.runtime_env.moe_a2a_backend]
        args += ["--context-length", str(server.model.max_model_len),
                 "--max-running-requests", str(settings.max_num_seqs),
                 "--random-seed", str(settings.seed)]
        if server.model.revision:
            args += ["--revision", server.model.revision]
        speculation = server.speculation.root
        if not speculation.is_off:
            method = speculation.method
            args += ["--speculative-algorithm", ALGORITHM[method], *SPECULATIVE_ARGS[method](speculation)]
        if settings.chunked_prefill is not None:
            size = "-1" if settings.chunked_prefill == "off" else str(settings.chunked_prefill)
            args += ["--chunked-prefill-size", size]
        if settings.prefix_caching is False:
            args.append("--disable-radix-cache")  # on by default, and there is no flag to turn it on
        if parser := self.tool_parser(server.model):
            args += ["--tool-call-parser", parser]
        if settings.grammar_backend:
            args += ["--grammar-backend", settings.grammar_backend]
        args.append("--enable-metrics")
        args.append("--enable-cache-report")  # cached prompt tokens per request, for agent turns' cache share
        args += self._device_args(server, model_path)
        args += server.runtime_env.extra_args
        return args


    router_module = "sglang_router.launch_router"
    # sglang-router 0.3.2 answers /health before it has registered a worker; /readiness once its workers are healthy
    router_ready_path = "/readiness"
    router_takes_ids = False  # its CompletionRequest.prompt is a string or strings (measured: 422 on ids)

    def router_args(self, server: ServerConfig, port: int, metrics_port: int, *, workers: Sequence[str] = (),
                    prefill: Sequence[tuple[str, int | None]] = (), decode: Sequence[str] = ()) -> list[str]:
        """sglang-router: round-robin over replicas, or its prefill/decode mode (SGLang's bootstrap protocol: the
        same request goes to a prefill and a decode server, which meet at the prefill's bootstrap port)."""
        assert self.router_module is not None
        topology = server.topology.root
        args = [sys.executable, "-m", self.router_module, "--host", server.settings.host, "--port", str(port),
                "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port),
                "--policy", getattr(topology, "policy", "round_robin"), "--worker-startup-check-interval", "1"]
        if workers:
            return [*args, "--worker-urls", *workers]
        args.append("--pd-disaggregation")
        for url, bootstrap in prefill:
            args += ["--prefill", url, str(bootstrap) if bootstrap is not None else "none"]
        for url in decode:
            args += ["--decode", url]
        return args

    def pd_args(self, server: ServerConfig, role: PdRole, next_port: Callable[[], int],
                scratch: Path) -> tuple[list[str], dict[str, str], int | None]:
        """``--disaggregation-mode`` with the transfer backend (default mooncake); a prefill server opens its
        bootstrap port, which the router passes on to the decode side."""
        topology = server.topology.root
        assert isinstance(topology, Disaggregated)
        args = ["--disaggregation-mode", role, "--disaggregation-transfer-backend", topology.connector or "mooncake"]
        if role == "decode":
            return args, {}, None
        bootstrap = next_port()
        return [*args, "--disaggregation-bootstrap-port", str(bootstrap)], {}, bootstrap

    multi_node_since = "0.5.0"  # --nnodes/--node-rank/--dist-init-addr, in SGLang's server arguments since 0.5.x

    def node_args(self, server: ServerConfig, node: NodeRank) -> list[str]:
        """The node's rank written per node (SGLang's own Slurm example expands it once in the batch shell, so every
        node gets rank 0); ranks >= 1 run no HTTP server."""
        return ["--nnodes", str(node.nodes), "--node-rank", str(node.rank),
                "--dist-init-addr", f"{node.head_addr}:{node.rendezvous_port}"]

    def engine_env(self, server: ServerConfig) -> dict[str, str]:
        own = cpu_env(server) if isinstance(server.hardware, CpuHardware) else dict(server.runtime_env.env)
        return {**QUIET_STOP_ENV, **own}  # the matrix's own environment wins

    def server_module(self, server: ServerConfig) -> str:
        return CPU_LAUNCHER if isinstance(server.hardware, CpuHardware) else self.module

    def _device_args(self, server: ServerConfig, model_path: str) -> list[str]:
        hardware = server.hardware
        if isinstance(hardware, GpuHardware):
            return ["--mem-fraction-static", str(hardware.memory_utilization)]
        return cpu_args(server, model_path)
