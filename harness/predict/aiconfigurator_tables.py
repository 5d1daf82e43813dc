"""What AIConfigurator 0.12.0 holds tables for: its engine versions, systems, bundled model configs, quant modes and
MoE routings, and the lookups of a GPU name and a model into them.

Facts of the library as shipped (its ``systems/<system>.yaml``, bundled model configs and ``query_versions.yaml``),
kept apart from the mapping that uses them (``harness.predict.aiconfigurator_inputs``). A cell outside them raises
``Unmappable``, whose message is the ``NoPrediction`` reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.config.matrix import ModelSpec

AICONFIGURATOR_VERSION = "0.12.0"
DATA_VERSIONS = {"sglang": "0.5.14", "vllm": "0.24.0"}
"""The engine versions whose kernel tables 0.12.0 ships for every system below ('current' in query_versions.yaml)."""
SYSTEMS = {"B200": "b200_sxm", "B300": "b300_sxm", "GB200": "gb200", "GB300": "gb300", "H100": "h100_sxm",
           "H200": "h200_sxm"}
HOPPER = frozenset({"h100_sxm", "h200_sxm"})
RACK_GPUS = {"gb200": 72, "gb300": 72}  # NVL72: one NVLink domain; a deployment beyond it is not what the tables hold
NODE_GPUS = {"b200_sxm": 8, "b300_sxm": 8, "h100_sxm": 8, "h200_sxm": 8}  # HGX nodes (systems/<system>.yaml)
EP_NODE_GPUS = NODE_GPUS | {"gb200": 4, "gb300": 4}
"""num_gpus_per_node of each system (systems/<system>.yaml): a GB200/GB300 compute tray holds 4 GPUs, although the
NVLink domain is the 72-GPU rack. AIConfigurator calls EP wider than this cross-node EP."""
DEEPEP = re.compile(r"deepep", re.IGNORECASE)
"""moe_a2a_backend spellings that run DeepEP's all-to-all, the only cross-node EP AIConfigurator prices."""
ROUTINGS = ("power_law_1.01", "power_law_1.2", "balanced")
"""MoE routing distributions 0.12.0 holds MoE tables for (moe_perf.parquet 'distribution')."""
QUANT = {"bf16": ("bfloat16", "bfloat16"), "fp16": ("bfloat16", "bfloat16"), "fp8": ("fp8_block", "fp8_block"),
          "fp4": ("nvfp4", "nvfp4")}
"""Weight precision -> (gemm, moe) quant modes. Every FP8 checkpoint mapped below is 128x128 block-scaled
(config.json weight_block_size), hence fp8_block; fp4 is ModelOpt NVFP4."""


@dataclass(frozen=True, slots=True)
class Bundled:
    """Bundled AIConfigurator configs of one model, by weight precision."""

    name: str
    configs: dict[str, str]
    kv_auto: dict[str, tuple[str, str]]
    """Precision -> the KV dtype the engines pick for ``kv_cache: auto`` on that checkpoint, and why."""
    quant: dict[str, tuple[str, str]] = field(default_factory=dict)
    """'precision' or 'precision/engine' -> (gemm, moe) where the checkpoint departs from ``QUANT``."""


_BF16_KV = ("bfloat16", "the checkpoint ships no KV scales, so the engines keep the model dtype")
_NVFP4_KV = ("fp8", "the NVFP4 checkpoint declares an FP8 KV cache (hf_quant_config kv_cache_quant_algo)")
_MODELS = {
    "deepseek-v3.1": Bundled("DeepSeek-V3.1", {"fp8": "deepseek-ai/DeepSeek-V3", "fp4": "nvidia/DeepSeek-V3.1-NVFP4"},
                             {"fp8": _BF16_KV, "fp4": _NVFP4_KV}),
    "deepseek-v3": Bundled("DeepSeek-V3", {"fp8": "deepseek-ai/DeepSeek-V3"}, {"fp8": _BF16_KV}),
    "deepseek-r1": Bundled("DeepSeek-R1", {"fp8": "deepseek-ai/DeepSeek-R1"}, {"fp8": _BF16_KV}),
    # V4-Pro's own release: FP4 (MX) experts with FP8 activations, block-FP8 elsewhere, FP8 KV by design; 0.12.0
    # has no NVFP4 MoE tables for its expert shape, so only the native checkpoint maps.
    "deepseek-v4-pro": Bundled("DeepSeek-V4-Pro", {"mxfp4": "deepseek-ai/DeepSeek-V4-Pro"},
                               {"mxfp4": ("fp8", "V4's attention stores an FP8 KV cache natively")},
                               {"mxfp4/sglang": ("fp8_block", "w4a8_mxfp4_mxfp8_trtllm"),
                                "mxfp4/vllm": ("fp8_block", "w4a8_mxfp4_mxfp8")}),
    "qwen3-235b-a22b": Bundled("Qwen3-235B-A22B", {"bf16": "Qwen/Qwen3-235B-A22B", "fp8": "Qwen/Qwen3-235B-A22B-FP8",
                                                   "fp4": "nvidia/Qwen3-235B-A22B-NVFP4"},
                               {"bf16": _BF16_KV, "fp8": _BF16_KV, "fp4": _NVFP4_KV}),
}
_FAMILIES = {"deepseek-v31": "deepseek-v3.1", "deepseek-v3": "deepseek-v3"}
"""Families that name one architecture (a local model path still maps); 'qwen3' spans many sizes, so it does not."""


class Unmappable(Exception):
    """A cell AIConfigurator cannot be asked about; the message is the NoPrediction reason."""


def system_for(gpu: str) -> str:
    """The AIConfigurator system of a GPU name as a matrix writes it (``H100-SXM``, ``GB200 NVL72``, ``h200``)."""
    name = re.sub(r"[^A-Z0-9]", "", gpu.upper())
    name = re.sub(r"(SXM\d?|NVL\d*)$", "", name)
    if name not in SYSTEMS:
        raise Unmappable(f"AIConfigurator {AICONFIGURATOR_VERSION} has no {'/'.join(DATA_VERSIONS)} tables for GPU "
                         f"{gpu!r} (it has {', '.join(SYSTEMS)})")
    return SYSTEMS[name]


def bundled_for(model: ModelSpec) -> Bundled:
    """The bundled configs of ``model``: by its id's last part, else by its family (a local path still maps)."""
    entry = _MODELS.get(model.id.rsplit("/", 1)[-1].lower()) or _MODELS.get(_FAMILIES.get(model.family or "", ""))
    if entry is None:
        raise Unmappable(f"no bundled config for {model.id}; AIConfigurator {AICONFIGURATOR_VERSION} is mapped for "
                         f"{', '.join(e.name for e in _MODELS.values())}")
    return entry
