"""SGLang on a CPU without its kernels: the flags, environment and limits of the real ``sglang==0.5.23`` server
run from its own venv (``make setup-sglang``: ``build/engines/sglang``) with the project's ``sgl_kernel`` stand-in
(``engines/sglang_cpu``), as measured on 2-core AVX2 machines (docs/sglang-cpu.md).

What is SGLang's own there: its HTTP server and OpenAI API, tokenizer and detokenizer processes, scheduler,
continuous batching, radix cache, metrics, tool-call parsers and speculative-decoding control flow. What is not: its
CPU kernels (made for AMX Xeons). Its layers take SGLang's own torch fallbacks, and the attention and KV-index ops
its ``intel_amx`` backend calls are the stand-in's torch implementations, the same for every SGLang cell so that
speculation against ``off`` compares like with like. The report says so beside every SGLang figure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.config.hardware import CpuHardware
from harness.config.topology import Disaggregated
from harness.host import usable_cores
from harness.plan.cells import ServerConfig
from harness.plan.findings import Finding
from harness.servers.cpu_binding import thread_env
from harness.servers.runtime import PLAIN_DTYPES

SGLANG_CPU_VERSION = "0.5.23"
"""The SGLang release the stand-in and these flags were checked against."""
CPU_LAUNCHER = "sglang_cpu.launch_server"
"""``python -m sglang.launch_server`` with one platform fact overridden (engines/sglang_cpu/sglang_cpu): SGLang turns
``--attention-backend intel_amx`` into ``torch_native`` on a CPU without AMX, and ``torch_native`` cannot verify
speculative drafts."""
ATTENTION_BACKEND = "intel_amx"
FALLBACK_KV_TOKENS = 65536
"""``--max-total-tokens`` when the checkpoint's config.json is not on disk yet (a plan before the fixture build); the
launch always reads the checkpoint."""
CPU_CAVEAT = ("Its HTTP server, scheduler, continuous batching, radix cache, tool-call parsers and speculative "
              "control flow are SGLang's own; its layers run SGLang's torch fallbacks and the attention the "
              "project's sgl_kernel stand-in computes in torch, not SGLang's kernels (made for AMX Xeons and GPUs). "
              "vLLM against SGLang here compares two serving stacks on this machine, not their GPU kernels")
CPU_ENV = {"SGLANG_USE_CPU_ENGINE": "1", "HF_HUB_OFFLINE": "1"}
"""Without SGLANG_USE_CPU_ENGINE SGLang never selects its CPU platform."""
CPU_SPECULATION = frozenset({"ngram"})
"""Speculative methods whose every op the stand-in implements (NGRAM: index copies, tree verification, attention
with a tree mask)."""


def kv_bytes_per_token(config: dict[str, Any]) -> int:
    """Bytes one token takes in the KV cache, bf16: K and V per layer and KV head (or MLA's compressed latent)."""
    layers = int(config["num_hidden_layers"])
    if "kv_lora_rank" in config:  # MLA: one latent of kv_lora_rank + qk_rope_head_dim per layer
        return 2 * layers * (int(config["kv_lora_rank"]) + int(config["qk_rope_head_dim"]))
    heads = int(config.get("num_key_value_heads") or config["num_attention_heads"])
    head_dim = int(config.get("head_dim") or int(config["hidden_size"]) // int(config["num_attention_heads"]))
    return 2 * 2 * layers * heads * head_dim


def kv_cache_tokens(model_path: str, gib: float) -> int:
    """``--max-total-tokens`` holding ``hardware.kv_cache_gib`` of KV cache, the budget vLLM gets in bytes: SGLang
    sizes its pool in tokens, and without the flag sizes it from free RAM (14 GB on a 24 GB machine)."""
    try:
        config = json.loads((Path(model_path) / "config.json").read_text())
    except (OSError, json.JSONDecodeError):
        return FALLBACK_KV_TOKENS
    return max(int(gib * 2**30) // kv_bytes_per_token(config), 1)


def cpu_args(server: ServerConfig, model_path: str) -> list[str]:
    assert isinstance(server.hardware, CpuHardware)
    # the overlap scheduler prepares the next batch on a thread while the device runs this one; on a CPU the "device"
    # is the same two cores, and one request decoded 7-11 tok/s with it against ~110 without (2026-11-27, AVX2
    # EPYC: docs/sglang-cpu.md). NGRAM speculation turns it off by itself, so off and ngram cells compare alike.
    # An idle scheduler polls its sockets in a busy loop: a whole core per server on these two (30 CPU s in 30 s idle),
    # taken from whatever else runs; --sleep-on-idle blocks in zmq's poll, which wakes on the next request (0 CPU s in
    # 30 s at TP 1, 1 s at TP 2; the same greedy completion: 2026-11-27, docs/sglang-cpu.md).
    return ["--device", "cpu", "--attention-backend", ATTENTION_BACKEND, "--disable-cuda-graph",
            "--disable-overlap-schedule", "--sleep-on-idle",
            "--max-total-tokens", str(kv_cache_tokens(model_path, server.hardware.kv_cache_gib))]


def cpu_env(server: ServerConfig) -> dict[str, str]:
    assert isinstance(server.hardware, CpuHardware)
    # without the binding, TP 2 stops at start: "SGLANG_CPU_OMP_THREADS_BIND is not set ... number of numa node 1"
    threads = thread_env(server.hardware.threads, server.parallel.world_size, usable_cores(),
                         "SGLANG_CPU_OMP_THREADS_BIND")
    return {**CPU_ENV, **threads, **server.runtime_env.env}  # the matrix's own environment wins


def cpu_findings(server: ServerConfig) -> list[Finding]:
    """What SGLang cannot run on a CPU through the stand-in, as skips with the measured reason (docs/sglang-cpu.md
    gives each reproduction, measured on SGLang 0.5.23, 2026-11-27)."""
    label, speculation, par = server.label, server.speculation.root, server.parallel
    found = []
    if not speculation.is_off and speculation.method not in CPU_SPECULATION:
        found.append(Finding.skip(
            "sglang-cpu-speculation", f"axes.speculation ({label})",
            f"SGLang's {speculation.method} speculation on a CPU reaches sgl_kernel ops the stand-in does not "
            "implement (EAGLE-3: build_draft_decode_metadata_cpu, build_tree_kernel_efficient_cpu); it implements "
            f"those of {', '.join(sorted(CPU_SPECULATION))}",
            f"exclude {{runtime: sglang, speculation: {speculation.method}}} on cpu"))
    if server.precision.weights not in PLAIN_DTYPES:
        found.append(Finding.skip(
            "sglang-cpu-weights", f"axes.precision ({label})",
            f"SGLang's {server.precision.weights} layers have no CPU path without AMX (compressed-tensors W8A8 stops "
            "at load: 'Torch not compiled with CUDA enabled'; its own w8a8_int8 needs AMX or Arm64)",
            f"exclude {{runtime: sglang, precision: {server.precision.weights}}} on cpu"))
    if server.precision.kv_cache == "fp8":
        found.append(Finding.skip(
            "sglang-cpu-kv-fp8", f"axes.precision ({label})",
            "SGLang stops at start: 'CPU FP8 KV cache requires Intel AMX support'",
            "exclude {runtime: sglang, precision: bf16-kvfp8} on cpu"))
    if par.ep > 1:
        found.append(Finding.skip(
            "sglang-cpu-ep", f"axes.parallel ({label})",
            "SGLang's torch MoE fallback cannot take experts on another rank: the first forward fails with "
            "'index -1 is out of bounds for dimension 1' (fused_moe_native.py)",
            f"exclude {{runtime: sglang, parallel: {par.label}}} on cpu, or use ep: 1 (TP alone serves)"))
    if isinstance(server.topology.root, Disaggregated):
        found.append(Finding.skip(
            "sglang-cpu-pd", f"axes.topology ({label})",
            "no SGLang KV transfer backend is installed for the CPU (mooncake and nixl are CUDA/RDMA packages; "
            "'fake' moves no KV and its prefill side refuses it)",
            "use topology: {replicas: R} for SGLang on cpu (sglang-router over replicas serves)"))
    return found
