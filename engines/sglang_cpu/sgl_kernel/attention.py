"""``torch.ops.sgl_kernel.decode_attention_cpu`` and ``extend_attention_cpu``: paged attention over SGLang's KV pool,
one request at a time, in float32 torch, registered with ``torch.library`` under SGLang's names.

SGLang 0.5.23's ``intel_amx`` backend (``srt/layers/attention/intel_amx_backend.py``) calls them positionally with
the arguments below; what each computes is what SGLang's Triton kernels compute (``kernels/ops/attention/
decode_attention.py`` and ``extend_attention.py``): softmax(scale * q k^T, capped by ``logit_cap`` as
``cap * tanh(s / cap)``, masked) v, grouped-query heads sharing a KV head (``H / H_kv`` query heads each), a
per-head sink logit added to the softmax's denominator when ``sinks`` is given, and a sliding window, the
backend's ``sliding_window_size + 1`` (0: none), keeping key ``k`` for query ``q`` when ``q - k < window``.
A request's keys are its ``seq_lens[b]`` slots ``req_to_token[req_pool_indices[b], :seq_len]`` in ``k_buffer``.

- decode: one query token per request, the last of its ``seq_len``; when ``key``/``value`` are given the op first
  writes them into the buffers at ``loc`` (the backend leaves that write to the kernel). ``attn_logits`` is the
  C++ kernel's scratch (split-K partials); nothing reads it afterwards, and this leaves it untouched.
- extend: ``extend_seq_lens[b]`` new tokens from ``extend_start_loc[b]`` in ``q_extend``, after a prefix of
  ``seq_len - extend_len`` cached tokens that every new token sees. Among the new tokens, visibility is causal,
  all-to-all (``is_causal`` False), or ``tree_mask`` (speculative verification: request ``b``'s ``[E, E]`` bool
  block, row-major, blocks back to back; a mask of ``[E, seq_len]`` blocks, prefix included, is taken too). The
  new tokens' K/V are ``k_extend``/``v_extend`` when given, else read back from the buffers.

Cross-attention (encoder-decoder models) is not implemented and raises.
"""

from __future__ import annotations

import torch

from .masked_attention import attend, window_keep

NAMESPACE = "sgl_kernel"


def _req_slots(req_to_token: torch.Tensor, req: int, start: int, end: int) -> torch.Tensor:
    return req_to_token[req, start:end].to(torch.int64)


def _no_cross_attention(op: str, is_cross_attn: bool) -> None:
    if is_cross_attn:
        raise NotImplementedError(
            f"torch.ops.sgl_kernel.{op}: cross-attention is not implemented by the harness's CPU stand-in "
            "(engines/sglang_cpu)"
        )


@torch.library.custom_op(f"{NAMESPACE}::decode_attention_cpu", mutates_args=("k_cache", "v_cache", "output"))
def decode_attention_cpu(
    query: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    k_scale: float,
    v_scale: float,
    output: torch.Tensor,
    key: torch.Tensor | None,
    value: torch.Tensor | None,
    loc: torch.Tensor,
    attn_logits: torch.Tensor,
    req_to_token: torch.Tensor,
    req_pool_indices: torch.Tensor,
    seq_lens: torch.Tensor,
    sm_scale: float,
    logit_cap: float,
    is_cross_attn: bool,
    sliding_window_size: int,
    encoder_lens: torch.Tensor | None,
    sinks: torch.Tensor | None,
) -> None:
    """query ``[bs, H, D]``, caches ``[slots, H_kv, D]`` / ``[slots, H_kv, Dv]``, output ``[bs, H, Dv]``."""
    _no_cross_attention("decode_attention_cpu", is_cross_attn)
    num_kv_heads = k_cache.shape[1]
    if key is not None and value is not None:
        slots = loc.reshape(-1).to(torch.int64)
        k_cache[slots] = key.reshape(slots.numel(), num_kv_heads, -1).to(k_cache.dtype)
        v_cache[slots] = value.reshape(slots.numel(), num_kv_heads, -1).to(v_cache.dtype)
    for b, (req, seq_len) in enumerate(zip(req_pool_indices.tolist(), seq_lens.tolist(), strict=True)):
        slots = _req_slots(req_to_token, int(req), 0, int(seq_len))
        keep = None  # the decoded token is the last: it sees every key unless a window cuts some
        if sliding_window_size > 0:
            keep = window_keep(torch.tensor([int(seq_len) - 1]), torch.arange(int(seq_len)), sliding_window_size, True)
        output[b] = attend(
            query[b : b + 1],
            k_cache[slots].float() * k_scale,
            v_cache[slots].float() * v_scale,
            keep,
            sm_scale,
            logit_cap,
            sinks,
        )[0].to(output.dtype)


def _extend_visibility(
    tree_mask: torch.Tensor | None,
    mask_offset: int,
    prefix_len: int,
    extend_len: int,
    full_mask: bool,
    is_causal: bool,
) -> torch.Tensor:
    """``[E, prefix + E]``: which keys each new token sees, before the sliding window."""
    if tree_mask is not None and full_mask:
        size = extend_len * (prefix_len + extend_len)
        return tree_mask[mask_offset : mask_offset + size].view(extend_len, prefix_len + extend_len).to(torch.bool)
    if tree_mask is not None:
        block = tree_mask[mask_offset : mask_offset + extend_len * extend_len].view(extend_len, extend_len)
        block = block.to(torch.bool)
    elif is_causal:
        block = torch.ones(extend_len, extend_len, dtype=torch.bool).tril()
    else:
        block = torch.ones(extend_len, extend_len, dtype=torch.bool)
    return torch.cat([torch.ones(extend_len, prefix_len, dtype=torch.bool), block], dim=1)


@torch.library.custom_op(f"{NAMESPACE}::extend_attention_cpu", mutates_args=("o_extend",))
def extend_attention_cpu(
    q_extend: torch.Tensor,
    k_extend: torch.Tensor | None,
    v_extend: torch.Tensor | None,
    o_extend: torch.Tensor,
    k_buffer: torch.Tensor,
    v_buffer: torch.Tensor,
    k_scale: float,
    v_scale: float,
    req_to_token: torch.Tensor,
    req_pool_indices: torch.Tensor,
    seq_lens: torch.Tensor,
    extend_seq_lens: torch.Tensor,
    extend_start_loc: torch.Tensor,
    max_len_extend: int,
    sm_scale: float,
    logit_cap: float,
    is_cross_attn: bool,
    sliding_window_size: int,
    encoder_lens: torch.Tensor | None,
    sinks: torch.Tensor | None,
    tree_mask: torch.Tensor | None,
    is_causal: bool,
) -> None:
    """q_extend ``[tokens, H, D]``, k/v_extend ``[tokens, H_kv, D]``, o_extend ``[tokens, H, Dv]``."""
    _no_cross_attention("extend_attention_cpu", is_cross_attn)
    lens = [int(x) for x in seq_lens.tolist()]
    extends = [int(x) for x in extend_seq_lens.tolist()]
    starts = [int(x) for x in extend_start_loc.tolist()]
    mask = tree_mask.reshape(-1) if tree_mask is not None else None
    # the draft-only layout (what SGLang builds on a CPU) is [E, E] per request; the full one [E, seq_len]. With no
    # prefix anywhere the two are the same size and the same thing.
    draft_only_size = sum(e * e for e in extends)
    full_mask = mask is not None and mask.numel() != draft_only_size and mask.numel() == sum(
        e * s for e, s in zip(extends, lens, strict=True)
    )
    if mask is not None and not full_mask and mask.numel() < draft_only_size:
        raise ValueError(f"tree_mask has {mask.numel()} entries, fewer than the batch's {draft_only_size}")
    mask_offset = 0
    for req, seq_len, extend_len, start in zip(req_pool_indices.tolist(), lens, extends, starts, strict=True):
        prefix_len = seq_len - extend_len
        if prefix_len < 0:
            raise ValueError(f"extend_attention_cpu: extend length {extend_len} > sequence length {seq_len}")
        if extend_len == 0:
            continue
        prefix = _req_slots(req_to_token, int(req), 0, prefix_len)
        if k_extend is not None and v_extend is not None:
            new_k, new_v = k_extend[start : start + extend_len], v_extend[start : start + extend_len]
        else:
            new_slots = _req_slots(req_to_token, int(req), prefix_len, seq_len)
            new_k, new_v = k_buffer[new_slots], v_buffer[new_slots]
        keys = torch.cat([k_buffer[prefix].float(), new_k.float()]) * k_scale
        values = torch.cat([v_buffer[prefix].float(), new_v.float()]) * v_scale
        keep = _extend_visibility(mask, mask_offset, prefix_len, extend_len, full_mask, is_causal)
        mask_offset += extend_len * (seq_len if full_mask else extend_len)
        window = window_keep(torch.arange(prefix_len, seq_len), torch.arange(seq_len), sliding_window_size, is_causal)
        if window is not None:
            keep &= window
        out = attend(q_extend[start : start + extend_len], keys, values, keep, sm_scale, logit_cap, sinks)
        o_extend[start : start + extend_len] = out.to(o_extend.dtype)
