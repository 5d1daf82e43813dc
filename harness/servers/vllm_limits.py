"""What vLLM cannot run: the vLLM adapter's recipe findings (``VllmRuntime.findings``), as errors, skips and notes.

Kept apart from the flags (``harness.servers.vllm``) so that each module reads on its own. The CPU build's limits
were measured on these machines (docs/cpu-engine.md); the rest were read from vLLM 0.32/0.33's source.
"""

from __future__ import annotations

import importlib.util

from harness.config.hardware import CpuHardware, GpuHardware
from harness.config.topology import Disaggregated
from harness.host import cpu_has_amx, cpu_has_avx512, usable_cores
from harness.plan.cells import ServerConfig
from harness.plan.findings import Finding, ModelFacts
from harness.servers.runtime import PLAIN_DTYPES

# Online quantization vLLM can apply to a bf16 checkpoint; other precisions need a pre-quantized checkpoint.
_ONLINE_QUANT = frozenset({"fp8"})
# Quantizations the CPU build runs (measured, cpu-engine.md: int8 W8A8 outside the MoE experts on oneDNN; int4 weights
# with int8 activations; int4 weight-only needs AVX-512; fp8 dies at start); int2 only as rounded weights stored in
# bf16 (quantization: none), the degraded parity instrument.
_CPU_WEIGHTS = frozenset({"bf16", "fp16", "int8", "int4", "int2"})
CONNECTORS = ("ExampleConnector", "LMCacheConnectorV1", "LMCacheMPConnector", "NixlConnector", "NixlPullConnector",
              "NixlPushConnector", "MultiConnector", "MoRIIOConnector", "OffloadingConnector", "MooncakeConnector",
              "MooncakeStoreConnector", "FlexKVConnectorV1", "SimpleCPUOffloadConnector", "HF3FSKVConnector",
              "DecodeBenchConnector")
"""KV connectors vLLM 0.32 registers (distributed/kv_transfer/kv_connector/factory.py) that move KV between
servers or tiers."""
CPU_CONNECTORS = ("ExampleConnector",)
"""KV connectors the CPU build can run prefill/decode with (README: measured); NixlConnector needs the nixl wheels,
LMCache and the offloading connector are CUDA-only in this build (build notes in the README)."""


def vllm_findings(server: ServerConfig, facts: ModelFacts) -> list[Finding]:
    """What vLLM cannot run of ``server``, as errors, skips and notes (the adapter's ``findings``)."""
    par, speculation, weights = server.parallel, server.speculation.root, server.precision.weights
    key = f"axes.parallel ({server.label})"
    found = []
    if par.ep not in (1, par.world_size):
        found.append(Finding.skip(
            "vllm-ep-span", key, f"vLLM's expert parallelism spans all TP x DP ranks; ep={par.ep} with "
            f"tp={par.tp}, dp={par.dp} cannot be expressed", f"use ep: 1 or ep: {par.world_size} for vLLM"))
    if weights not in PLAIN_DTYPES and weights not in _ONLINE_QUANT and weights not in server.model.checkpoints:
        found.append(Finding.error(
            "vllm-checkpoint", f"models.{server.model_name}.checkpoints.{weights}",
            f"vLLM cannot quantize to {weights} at load time",
            f"give a pre-quantized checkpoint under models.{server.model_name}.checkpoints"))
    if getattr(speculation, "top_k", 1) > 1:
        found.append(Finding.skip("vllm-chain-drafts", f"axes.speculation ({server.label})",
                                  "vLLM drafts a chain (top_k 1); a draft tree is SGLang's",
                                  "use top_k: 1 for vLLM"))
    if getattr(speculation, "draft_tp", None) not in (None, 1, par.tp):
        found.append(Finding.error("vllm-draft-tp", f"axes.speculation ({server.label})",
                                   f"vLLM runs a draft model at TP 1 or the target's TP ({par.tp})",
                                   f"use draft_tp: 1 or {par.tp}"))
    if speculation.method == "suffix" and server.runtime_env.python is None and server.runtime_env.image is None \
            and importlib.util.find_spec("arctic_inference") is None:
        found.append(Finding.skip("vllm-suffix-package", f"axes.speculation ({server.label})",
                                  "vLLM's suffix decoding needs the arctic-inference package, which the "
                                  "harness's environment lacks", "pip install arctic-inference, or exclude "
                                  "suffix"))
    found += _pd_findings(server)
    if isinstance(server.hardware, CpuHardware):
        found += _cpu_findings(server, facts)
    return found


def _pd_findings(server: ServerConfig) -> list[Finding]:
    topology = server.topology.root
    if not isinstance(topology, Disaggregated) or topology.connector is None and \
            isinstance(server.hardware, GpuHardware):
        return []
    key = f"axes.topology ({server.label})"
    connector = topology.connector or CPU_CONNECTORS[0]
    if connector not in CONNECTORS:
        return [Finding.error("vllm-connector", key, f"vLLM has no KV connector {connector!r}",
                              f"use one of {', '.join(CONNECTORS)}")]
    if isinstance(server.hardware, CpuHardware) and connector not in CPU_CONNECTORS:
        return [Finding.skip("vllm-cpu-connector", key, f"the CPU build cannot run prefill/decode with "
                             f"{connector} (README: P/D on the CPU)", f"use connector: {CPU_CONNECTORS[0]}")]
    return []


def _cpu_findings(server: ServerConfig, facts: ModelFacts) -> list[Finding]:
    """What the CPU build (vllm-cpu 0.32) cannot do, as measured on these machines (cpu-engine.md)."""
    key, precision = f"axes ({server.label})", server.precision
    found = []
    found += _cpu_rank_findings(server)
    if precision.weights not in _CPU_WEIGHTS:
        found.append(Finding.skip(
            "vllm-cpu-weights", key, f"the CPU build cannot serve {precision.weights} weights (--quantization "
            "fp8 dies at start: _C::static_scaled_fp8_quant() is not built for the CPU)",
            f"exclude {{runtime: vllm, precision: {precision.label}}} on cpu"))
    if precision.kv_cache == "fp8" and not (cpu_has_avx512() or cpu_has_amx()):
        # measured 2026-11-26 on an AVX2-only AMD EPYC: the worker stops at start (v1/attention/backends/cpu_attn.py)
        found.append(Finding.skip(
            "vllm-cpu-kv-fp8-isa", key, "an fp8 KV cache on the CPU build needs AVX-512 or AMX, which this CPU "
            "lacks: the engine stops at start ('FP8 KV cache on CPU requires x86 with AVX-512 or AMX')",
            f"exclude {{precision: {precision.label}}} on this machine"))
    if precision.kv_cache == "fp8" and facts.mla:
        found.append(Finding.skip(
            "vllm-cpu-mla-kv", key, "MLA on the CPU has no fp8 KV cache: the engine starts, then dies on the "
            "first request", f"exclude {{model: {server.model_name}, precision: {precision.label}}}"))
    settings = server.settings
    if facts.mla and not cpu_has_amx() and (isinstance(settings.chunked_prefill, int) or settings.prefix_caching):
        found.append(Finding.note("vllm-cpu-mla-amx", key, "MLA on a CPU without AMX: vLLM forces chunked "
                                  "prefill and prefix caching off whatever the matrix asks", ""))
    return found


def _cpu_rank_findings(server: ServerConfig) -> list[Finding]:
    """TP runs with one share of the cores per rank (``cpu_binding``); DP and EP do not run on the CPU build."""
    par, key = server.parallel, f"axes.parallel ({server.label})"
    found = []
    if par.ep > 1:
        # measured 2026-11-26 (docs/cpu-engine.md): CPUUnquantizedExperts.apply hands global expert ids to
        # cpu_fused_moe and ignores the rank's expert_map; --enforce-eager and --dtype float32 crash the same way
        found.append(Finding.skip(
            "vllm-cpu-ep", key, "expert parallelism on the CPU build starts, then segfaults at the first request "
            "(csrc/cpu/cpu_fused_moe.cpp:242: the unquantized CPU experts read global expert ids past the rank's "
            "shard); with dp > 1 it stops on all_gatherv (NotImplementedError in the CPU communicator)",
            f"exclude {{parallel: {par.label}}} on cpu, or use ep: 1"))
    if par.dp > 1:
        found.append(Finding.error("vllm-cpu-dp", key, "data parallelism on the CPU build is not measured here (with "
                                   "expert parallelism it fails on all_gatherv)", "use dp: 1 on cpu"))
    cores = usable_cores()
    if par.world_size > len(cores):
        found.append(Finding.error(
            "vllm-cpu-cores", key, f"{par.world_size} ranks need a core each (VLLM_CPU_OMP_THREADS_BIND gives every "
            f"rank its own cores), and this process may use {len(cores)}",
            f"use tp x dp <= {len(cores)} on this machine"))
    return found
