"""Kernel and operator names → the four groups a MoE recipe is defended with.

One ordered rule table serves both profilers: GPU kernel names from ``nsys stats`` (``fused_moe_kernel``,
``ncclDevKernel_AllReduce_...``, ``flash::flash_fwd_splitkv_kernel<...>``) and torch-profiler operator names from
the CPU build (``_C::cpu_fused_moe``, ``vllm::unified_attention_with_output``, ``vllm::all_reduce``). The first
rule that matches wins, so communication is tested before MoE (DeepEP's ``dispatch``/``combine`` live in MoE
namespaces but are all-to-all traffic) and MoE before attention.

The MoE group holds the expert path as a whole: the grouped / fused expert GEMMs and the routing kernels that
exist only because of them (top-k gating, block alignment, permute / unpermute). Dense GEMMs (QKV, output and
LM-head projections), norms, activations, sampling and framework overhead fall into ``other``.
"""

from __future__ import annotations

import re
from typing import Literal

KernelGroup = Literal["moe_gemm", "attention", "communication", "other"]

GROUPS: tuple[KernelGroup, ...] = ("moe_gemm", "attention", "communication", "other")
"""Display order of the groups in every table."""

GROUP_LABELS: dict[KernelGroup, str] = {
    "moe_gemm": "MoE GEMM",
    "attention": "attention",
    "communication": "communication",
    "other": "sampling / other",
}

# Case-insensitive; each pattern names the libraries or kernels it is there for.
_RULES: tuple[tuple[KernelGroup, tuple[str, ...]], ...] = (
    ("communication", (
        r"nccl",                                   # ncclDevKernel_AllReduce_*, ncclKernel_*, NCCL:ncclAllReduce ranges
        r"all_?reduce|all_?gather|reduce_?scatter",
        r"all_?to_?all|all2all|alltoall",
        r"cross_device_reduce",                    # vLLM custom all-reduce (1stage / 2stage)
        r"deep_?ep",                               # deep_ep::intranode::dispatch / combine, internode
        r"pplx",                                   # pplx-kernels dispatch / combine
        r"nvshmem|mscclpp|nixl|(?:^|[^a-z])mori(?:[^a-z]|$)",
        r"moe_a2a|\bc10d::|gloo",                  # flashinfer MoE all-to-all; torch.distributed on the CPU
    )),
    ("moe_gemm", (
        r"fused_moe|fused_experts|moe_forward",    # triton fused_moe_kernel, vllm::moe_forward, _C::cpu_fused_moe
        r"zentorch_fused_moe",
        r"moe_align|moe_sum|moe_permute|moe_unpermute|topk_?gating|topkgating|grouped_topk|moe_fused_gate",
        r"cutlass_moe|moe_gemm|moegemm|moe_mm|marlin_moe|moe_wna16",
        r"grouped_?gemm|group_?gemm|groupproblemshape",  # CUTLASS grouped GEMM (per-expert problems)
        r"m_grouped|groupedmasked|groupedcontiguous",    # DeepGEMM m-grouped contiguous / masked
        r"expandinputrows|finalizemoerouting|moe::dev|routingdeepseek|routingrenormalize",  # TRT-LLM / flashinfer
        r"ep_scatter|ep_gather|shuffle_rows",
        r"(?:^|[^a-z])experts?(?:[^a-z]|$)",
    )),
    ("attention", (
        r"attn|attention",                         # flash_attn, unified_attention, cpu_attention_with_kv_cache
        r"flash_fwd|flash::|fmha|flashinfer|xqa",  # FlashAttention 2/3, flashinfer prefill/decode, TRT-LLM XQA
        r"(?:^|[^a-z])mla|mla(?:[^a-z]|$)|flashmla",  # FlashMLA, cutlass_mla, concat_and_cache_mla
        r"paged_?kv|pagedattention|paged_attention|batchdecode|batchprefill",
        r"reshape_and_cache|kv_cache_update|slot_mapping|scheduler_metadata",  # KV-cache writes and metadata
        r"rotary|rope_",
        r"scaled_dot_product|sdpa",
    )),
)

_COMPILED = tuple((group, re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE))
                  for group, patterns in _RULES)


def classify(name: str) -> KernelGroup:
    """The group a kernel or operator name belongs to; ``other`` when no rule matches."""
    for group, pattern in _COMPILED:
        if pattern.search(name):
            return group
    return "other"
