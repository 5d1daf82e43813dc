"""Kernel and operator names from both profilers land in the group a MoE recipe is argued with."""

from __future__ import annotations

import pytest

from harness.profiling import GROUP_LABELS, GROUPS, classify

NAMES = [
    # GPU kernels (nsys cuda_gpu_kern_sum)
    ("fused_moe_kernel", "moe_gemm"),
    ("void vllm::moe::moe_align_block_size_kernel<int>(const int *, int *, int *, int *, int, int)", "moe_gemm"),
    ("void vllm::moe::topkGatingSoftmax<(int)8, (int)128, (int)4, (int)16, (int)32, int, float>(...)", "moe_gemm"),
    ("void deep_gemm::sm90_m_grouped_fp8_gemm_masked_1d2d_impl<(unsigned int)128>(float *, int *)", "moe_gemm"),
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<"
     "cute::tuple<int, int, int>>, void>>(T1::Params)", "moe_gemm"),
    ("void tensorrt_llm::kernels::cutlass_kernels::expandInputRowsKernel<__nv_bfloat16>(...)", "moe_gemm"),
    ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false>>(...)", "attention"),
    ("void flashinfer::BatchPrefillWithPagedKVCacheKernel<(unsigned int)1>(...)", "attention"),
    ("void flash_fwd_splitkv_mla_kernel<cutlass::bfloat16_t>(Flash_fwd_mla_params)", "attention"),
    ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(...)",
     "attention"),
    ("void vllm::paged_attention_v2_kernel<__nv_bfloat16>(...)", "attention"),
    ("kernel_unified_attention_2d", "attention"),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)", "communication"),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, (int)8>(...)", "communication"),
    ("void deep_ep::internode_ll::dispatch<(bool)1, (int)3, (int)7168>(void *)", "communication"),
    ("void deep_ep::intranode::combine<__nv_bfloat16, (int)8, (int)768>(...)", "communication"),
    ("void pplx::dispatchKernel<__nv_bfloat16>(...)", "communication"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel__5x_cublas",
     "other"),
    ("void vllm::rms_norm_kernel<c10::BFloat16, (int)8, (int)3>(...)", "other"),
    ("void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>>>",
     "other"),
    # CPU operators (torch profiler on vLLM's CPU build, as seen in the real trace)
    ("_C::cpu_fused_moe", "moe_gemm"),
    ("vllm::moe_forward", "moe_gemm"),
    ("vllm::unified_attention_with_output", "attention"),
    ("_C::cpu_attention_with_kv_cache", "attention"),
    ("_C::cpu_attn_reshape_and_cache", "attention"),
    ("vllm::unified_kv_cache_update", "attention"),
    ("vllm::all_reduce", "communication"),
    ("c10d::allreduce_", "communication"),
    ("_C::onednn_mm", "other"),
    ("_C::greedy_argmax", "other"),
    ("execute_context_0(0)_generation_1(1)", "other"),
    ("aten::slice", "other"),
]


@pytest.mark.parametrize(("name", "group"), NAMES)
def test_classify(name: str, group: str) -> None:
    assert classify(name) == group


def test_words_that_merely_contain_a_pattern_stay_other() -> None:
    assert classify("void normlayer_kernel<float>()") == "other"  # 'mla' inside a word is not MLA
    assert classify("memory_copy") == "other"


def test_every_group_has_a_label_in_display_order() -> None:
    assert GROUPS == ("moe_gemm", "attention", "communication", "other")
    assert set(GROUP_LABELS) == set(GROUPS)
    assert GROUP_LABELS["other"] == "sampling / other"
