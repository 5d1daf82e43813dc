"""The ``sgl_kernel`` names SGLang 0.5.23 uses, each checked against that version: the committed list the import
drift test compares a source tree with (``imports_check``), and the package's surface is built from it.

Each name was read in SGLang's source (``grep -rn NAME`` under ``sglang/``) to say whether a CPU without AMX reaches
it. Ten are reached with ``--attention-backend intel_amx --speculative-algorithm NGRAM`` and are real (``REAL_OPS``);
the rest sit behind CUDA, ROCm, XPU, MUSA, Metal or AMX branches, or are torch ops SGLang probes with ``hasattr``
and replaces with its own torch code when they are absent.
"""

from __future__ import annotations

SGLANG_VERSION = "0.5.23"

TOP_LEVEL = frozenset("""
    allreduce apply_token_bitmask_inplace_cuda assign_draft_cache_locs_contiguous_cpu
    assign_extend_cache_locs_cpu assign_req_to_token_pool_cpu awq_dequantize biased_topk
    build_draft_decode_metadata_cpu build_tree_kernel_efficient build_tree_kernel_efficient_cpu
    compress_norm_rope_store concat_mla_k copy_all_layer_kv_cache_cpu cutlass_w4a8_moe_mm
    es_fp8_blockwise_scaled_grouped_mm es_sm100_mxfp8_blockscaled_grouped_mm
    es_sm100_mxfp8_blockscaled_grouped_quant fast_topk_transform_fused fast_topk_transform_ragged_fused
    fast_topk_v2 fill_accept_out_cache_loc_cpu fill_bonus_tokens_cpu flash_compress128_decode
    flash_compress128_prefill flash_compress4_decode flash_compress4_prefill flash_mla_decode
    flash_mla_decode_get_workspace_size flash_mla_get_workspace_size flash_mla_prefill
    flash_mla_prefill_get_workspace_size flash_mla_sparse_fwd flash_mla_with_kvcache
    fp8_blockwise_scaled_grouped_mm fp8_mqa_logits fp8_paged_mqa_logits fp8_paged_mqa_logits_triton
    fp8_scaled_mm fused_add_rmsnorm fused_experts fused_hc_head fused_inplace_qknorm_rope
    fused_k_norm_rope_flashmla fused_q_indexer_rope_hadamard_quant fused_q_norm_rope
    fused_qk_rope_with_cos_sin_cache_inplace gdn_attention gelu_and_mul gelu_quick gelu_tanh_and_mul
    gemma_fused_add_rmsnorm gemma_rmsnorm get_cutlass_w4a8_moe_mm_data hadamard_transform hash_topk hc_post
    hc_split_sinkhorn infllmv2_attn_stage1 int8_scaled_mm kvcacheio load_cache_to_device_buffer_dsv4_mla
    load_cache_to_device_buffer_mla max_pooling_1d_varlen merge_state_v2 metal mhc_fused_post_pre mhc_pre
    min_p_sampling_from_probs minimax_decode_topk moe_fused_gate moe_sum moe_sum_reduce
    multimodal_rotary_embedding plan_compress_decode plan_compress_decode_legacy plan_compress_prefill
    plan_compress_prefill_legacy rmsnorm rotary_embedding rotate_input_ids_cpu sgl_per_tensor_quant_fp8
    sgl_per_token_quant_fp8 shuffle_rows silu_and_mul silu_and_mul_clamp spatial store_cache_xpu top_k
    top_k_renorm_prob top_k_top_p_sampling_from_probs top_p_renorm_prob topk_sigmoid topk_softmax
    transfer_cache_dsv4_mla tree_speculative_sampling_target_only verify_tree_greedy verify_tree_greedy_cpu
    weak_ref_tensor
""".split())
"""``from sgl_kernel import X`` and ``sgl_kernel.X``: functions, and the submodules below."""

IN_SUBMODULES = frozenset("""
    elementwise.copy_to_gpu_no_ce flash_attn.build_bidirectional_block_ids flash_attn.flash_attn_varlen_func
    flash_attn.flash_attn_with_kvcache flash_attn.get_scheduler_metadata kvcacheio.get_device_accessible_ptr
    kvcacheio.transfer_embedding_ranges_direct kvcacheio.transfer_kv_all_layer
    kvcacheio.transfer_kv_all_layer_direct_lf_pf kvcacheio.transfer_kv_all_layer_lf_pf
    kvcacheio.transfer_kv_all_layer_lf_ph kvcacheio.transfer_kv_all_layer_mla
    kvcacheio.transfer_kv_all_layer_mla_lf_pf kvcacheio.transfer_kv_direct kvcacheio.transfer_kv_per_layer
    kvcacheio.transfer_kv_per_layer_direct_pf_lf kvcacheio.transfer_kv_per_layer_mla
    kvcacheio.transfer_kv_per_layer_mla_pf_lf kvcacheio.transfer_kv_per_layer_pf_lf
    kvcacheio.transfer_kv_per_layer_ph_lf mamba.causal_conv1d_fn_cpu mamba.causal_conv1d_update_cpu
    mamba.chunk_gated_delta_rule_cpu quantization.ggml_dequantize quantization.ggml_moe_a8
    quantization.ggml_moe_a8_vec quantization.ggml_mul_mat_a8 quantization.ggml_mul_mat_vec_a8
    scalar_type.ScalarType scalar_type.scalar_types speculative.reconstruct_indices_from_tree_mask
    utils.is_arch_support_pdl
""".split())
"""``from sgl_kernel.sub import X`` as ``sub.X``."""

TORCH_OPS = frozenset("""
    apply_gguf_moe_weights apply_multidimensional_rope_cpu apply_rotary_pos_emb_cpu biased_grouped_topk_cpu
    bmm_cpu causal_conv1d_weight_pack conv3d_embed_cpu conv3d_embed_weight_pack convert_scale_packed
    convert_weight_packed convert_weight_packed_scale_zp decode_attention_cpu deepseek_v4_topk_transform_512
    dsv4_fused_q_indexer_rope_hadamard_quant extend_attention_cpu flash_attn_varlen_func
    fp8_per_tensor_scaled_mm_cpu fp8_scaled_mm_cpu fused_add_rmsnorm_cpu fused_dual_residual_rmsnorm_cpu
    fused_experts_cpu fused_gdn_gating_cpu fused_input_proj_cpu fused_linear_sigmoid_mul fused_moe_router_cpu
    fused_norm_scale_shift_cpu fused_qk_gemma_rmsnorm_cpu fused_qk_gemma_rmsnorm_with_gate_cpu fused_qk_norm_cpu
    fused_qk_norm_rope_cpu fused_qk_rmsnorm_apply_from_stats_cpu fused_qk_rmsnorm_cpu fused_qk_rmsnorm_sumsq_cpu
    fused_qkvzba_split_reshape_cat_contiguous_cpu fused_qkvzba_split_reshape_cat_cpu fused_rmsnorm_gated_cpu
    fused_scale_residual_norm_scale_shift fused_scale_residual_norm_scale_shift_cpu fused_scale_shift_cpu
    fused_sigmoid_gating_delta_rule_update_cpu fused_sigmoid_mul_cpu gdn_attention gelu_and_mul_cpu
    gelu_tanh_and_mul_cpu gemma3_rmsnorm_cpu gemma4_rmsnorm_cpu gemma_fused_add_rmsnorm_cpu gemma_rmsnorm_cpu
    get_device_accessible_ptr grouped_topk_cpu image_preprocess_cpu init_cpu_threads_env initialize
    int4_scaled_mm_cpu int8_scaled_mm_with_quant l2norm_cpu layernorm_cpu multimodal_rotary_embedding_cpu
    murmur_hash32_cpu qkv_proj_with_rope_fused_weight query_device rmsnorm_cpu rotary_embedding
    rotary_embedding_cpu shared_expert_cpu shm_allgather shm_allreduce shm_alltoall shm_group_initialize
    silu_and_mul_cpu store_cache_cpu topk_sigmoid_cpu topk_softmax_cpu topk_transform topk_transform_paged
    topk_transform_ragged transfer_embedding_ranges_direct weight_packed_linear
""".split())
"""``torch.ops.sgl_kernel.X`` (called, or probed with ``hasattr``)."""

SUBMODULES = frozenset({
    "allreduce", "elementwise", "flash_attn", "kvcacheio", "mamba", "quantization", "scalar_type", "speculative",
    "utils",
    # imported as `from sgl_kernel import X` but modules in the real package (read at their call sites:
    # `metal._metal`, `spatial.create_greenctx_stream_by_value`, `top_k.fast_topk_v2`)
    "metal", "spatial", "top_k",
})
"""Names that are submodules of the real package. Only ``speculative`` exists here; importing another raises
``ImportError``, which SGLang's own guards expect from a build without that part."""

REAL_OPS = frozenset({
    "sgl_kernel.assign_req_to_token_pool_cpu",
    "sgl_kernel.assign_extend_cache_locs_cpu",
    "sgl_kernel.assign_draft_cache_locs_contiguous_cpu",
    "sgl_kernel.fill_bonus_tokens_cpu",
    "sgl_kernel.fill_accept_out_cache_loc_cpu",
    "sgl_kernel.copy_all_layer_kv_cache_cpu",
    "sgl_kernel.verify_tree_greedy_cpu",
    "sgl_kernel.speculative.reconstruct_indices_from_tree_mask",
    "torch.ops.sgl_kernel.decode_attention_cpu",
    "torch.ops.sgl_kernel.extend_attention_cpu",
})
"""What this stand-in implements, in torch, after SGLang's own reference kernels."""

KNOWN_IMPORTS = frozenset(
    {f"sgl_kernel.{name}" for name in TOP_LEVEL | IN_SUBMODULES}
    | {f"torch.ops.sgl_kernel.{name}" for name in TORCH_OPS}
)
"""Every name, as ``imports_check.sgl_kernel_names`` writes it."""

PLACEHOLDERS = frozenset(TOP_LEVEL - SUBMODULES - {name.removeprefix("sgl_kernel.") for name in REAL_OPS})
"""Top-level names imported but never called on this CPU: the package answers each with a placeholder."""
