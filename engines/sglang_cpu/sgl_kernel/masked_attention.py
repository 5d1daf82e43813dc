"""One request's attention in float32: the arithmetic both attention ops share (``attention.py`` says what each
argument means in SGLang's terms)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def window_keep(q_pos: torch.Tensor, k_pos: torch.Tensor, window: int, is_causal: bool) -> torch.Tensor | None:
    """``[Q, K]``: keys inside the sliding window of each query; None (all keys) when ``window <= 0``. A causal
    window looks back only (``q - k < window``); a non-causal one both ways, as SGLang's Triton kernel does."""
    if window <= 0:
        return None
    distance = q_pos.view(-1, 1) - k_pos.view(1, -1)
    keep = distance < window
    if not is_causal:
        keep &= -distance < window
    return keep


def attend(
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    keep: torch.Tensor | None,
    sm_scale: float,
    logit_cap: float,
    sinks: torch.Tensor | None,
) -> torch.Tensor:
    """softmax(masked capped scaled ``q k^T``) ``v`` for ``query`` ``[Q, H, D]``, ``keys`` ``[K, H_kv, D]`` and
    ``values`` ``[K, H_kv, Dv]`` (float32, already scaled by the KV scales), ``keep`` ``[Q, K]`` (None: every key);
    returns ``[Q, H, Dv]`` float32. Query head ``h`` reads KV head ``h // (H / H_kv)``. A query that keeps no key
    and has no sink gets zeros."""
    num_q, num_heads, _ = query.shape
    num_kv_heads = keys.shape[1]
    if num_heads % num_kv_heads:
        raise ValueError(f"{num_heads} query heads do not group over {num_kv_heads} KV heads")
    if logit_cap <= 0 and sinks is None and (keep is None or bool(keep.any(dim=1).all())):
        # the common case is torch's own fused kernel (SDPA), in float32 as below
        out = F.scaled_dot_product_attention(
            query.float().transpose(0, 1), keys.transpose(0, 1), values.transpose(0, 1), attn_mask=keep,
            scale=sm_scale, enable_gqa=True,
        )
        return out.transpose(0, 1)
    if keep is None:
        keep = torch.ones(num_q, keys.shape[0], dtype=torch.bool)
    group = num_heads // num_kv_heads
    q = query.float().view(num_q, num_kv_heads, group, -1).permute(1, 2, 0, 3)  # [H_kv, G, Q, D]
    k = keys.permute(1, 0, 2)  # [H_kv, K, D]
    v = values.permute(1, 0, 2)  # [H_kv, K, Dv]
    scores = torch.matmul(q, k.unsqueeze(1).transpose(-1, -2)) * sm_scale  # [H_kv, G, Q, K]
    if logit_cap > 0:
        scores = logit_cap * torch.tanh(scores / logit_cap)
    scores = scores.masked_fill(~keep.to(scores.device), float("-inf"))
    if sinks is not None:
        sink = sinks.float().view(num_kv_heads, group, 1, 1).expand(num_kv_heads, group, num_q, 1)
        scores = torch.cat([scores, sink], dim=-1)
    peak = scores.amax(dim=-1, keepdim=True).clamp_min(torch.finfo(torch.float32).min)  # a fully masked row: -inf
    weights = torch.exp(scores - peak)
    weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(torch.float32).tiny)
    if sinks is not None:
        weights = weights[..., :-1]
    out = torch.matmul(weights, v.unsqueeze(1))  # [H_kv, G, Q, Dv]
    return out.permute(2, 0, 1, 3).reshape(num_q, num_heads, -1)
