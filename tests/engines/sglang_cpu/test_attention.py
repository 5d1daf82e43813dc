"""``torch.ops.sgl_kernel.decode_attention_cpu`` and ``extend_attention_cpu``, called positionally as SGLang 0.5.23's
``intel_amx`` backend calls them, against ``torch.nn.functional.scaled_dot_product_attention`` (and, for the logit cap
and sinks SDPA lacks, a float64 softmax written out): several requests of different lengths in a paged KV pool with
scattered slots, four query heads over two KV heads, causal and tree masks."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F

import sgl_kernel  # noqa: F401  (registers the ops)

H, H_KV, D, DV, SLOTS, POOL_LEN = 4, 2, 16, 16, 96, 40
SCALE = D**-0.5


@dataclass
class Pool:
    """A KV pool and the table of each request's slots, as SGLang's ``req_to_token``."""

    k: torch.Tensor
    v: torch.Tensor
    req_to_token: torch.Tensor
    req_pool_indices: torch.Tensor
    seq_lens: torch.Tensor

    def keys(self, b: int) -> tuple[torch.Tensor, torch.Tensor]:
        slots = self.req_to_token[int(self.req_pool_indices[b]), : int(self.seq_lens[b])].long()
        return self.k[slots].float(), self.v[slots].float()


def make_pool(seq_lens: list[int], dtype: torch.dtype = torch.float32, seed: int = 0) -> Pool:
    generator = torch.Generator().manual_seed(seed)
    k = torch.randn(SLOTS, H_KV, D, generator=generator).to(dtype)
    v = torch.randn(SLOTS, H_KV, DV, generator=generator).to(dtype)
    req_to_token = torch.zeros(4, POOL_LEN, dtype=torch.int32)
    slots = torch.randperm(SLOTS - 1, generator=generator)[: sum(seq_lens)].to(torch.int32) + 1  # slot 0: padding
    req_pool_indices = torch.tensor([3, 1, 0][: len(seq_lens)], dtype=torch.int64)
    offset = 0
    for req, length in zip(req_pool_indices.tolist(), seq_lens, strict=False):
        req_to_token[req, :length] = slots[offset : offset + length]
        offset += length
    return Pool(k, v, req_to_token, req_pool_indices, torch.tensor(seq_lens, dtype=torch.int64))


def sdpa(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """q ``[Q, H, D]``, keys/values ``[K, H_kv, *]``, keep ``[Q, K]`` -> ``[Q, H, Dv]``."""
    group = H // H_KV  # query head h reads KV head h // group
    k = keys.transpose(0, 1).repeat_interleave(group, 0)
    v = values.transpose(0, 1).repeat_interleave(group, 0)
    return F.scaled_dot_product_attention(q.float().transpose(0, 1), k, v, attn_mask=keep, scale=SCALE).transpose(0, 1)


def explicit(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, keep: torch.Tensor, cap: float,
             sinks: torch.Tensor | None) -> torch.Tensor:
    """The same attention in float64, one head at a time, with a logit cap and a sink logit per head."""
    out = torch.empty(q.shape[0], H, DV, dtype=torch.float64)
    for h in range(H):
        s = q[:, h].double() @ keys[:, h // (H // H_KV)].double().T * SCALE
        s = cap * torch.tanh(s / cap) if cap > 0 else s
        s = s.masked_fill(~keep, float("-inf"))
        e = torch.exp(s - s.amax(dim=1, keepdim=True))
        denominator = e.sum(dim=1, keepdim=True)
        if sinks is not None:
            denominator = denominator + torch.exp(sinks[h].double() - s.amax(dim=1, keepdim=True))
        out[:, h] = (e / denominator) @ values[:, h // (H // H_KV)].double()
    return out.float()


def decode(pool: Pool, q: torch.Tensor, key: torch.Tensor | None, value: torch.Tensor | None, loc: torch.Tensor,
           window: int = 0, cap: float = 0.0, sinks: torch.Tensor | None = None) -> torch.Tensor:
    out = torch.empty(q.shape[0], H, DV, dtype=q.dtype)
    attn_logits = torch.zeros(q.shape[0], H, 8, DV + 1)
    torch.ops.sgl_kernel.decode_attention_cpu(q, pool.k, pool.v, 1.0, 1.0, out, key, value, loc, attn_logits,
                                              pool.req_to_token, pool.req_pool_indices, pool.seq_lens, SCALE, cap,
                                              False, window, None, sinks)
    return out


def test_decode_writes_the_new_kv_at_loc_then_attends_over_each_requests_tokens() -> None:
    seq_lens = [9, 1, 23]
    pool = make_pool(seq_lens)
    rows = pool.req_pool_indices.tolist()
    loc = torch.stack([pool.req_to_token[r, n - 1] for r, n in zip(rows, seq_lens, strict=True)]).long()
    key, value = torch.randn(3, H_KV, D), torch.randn(3, H_KV, DV)
    q = torch.randn(3, H, D)

    out = decode(pool, q, key, value, loc)

    assert torch.equal(pool.k[loc], key) and torch.equal(pool.v[loc], value)
    for b in range(3):
        keys, values = pool.keys(b)
        expected = sdpa(q[b : b + 1], keys, values, torch.ones(1, seq_lens[b], dtype=torch.bool))
        torch.testing.assert_close(out[b : b + 1], expected, rtol=1e-5, atol=1e-5)


def test_decode_without_new_kv_reads_the_cache_only_and_keeps_it() -> None:
    pool = make_pool([5, 12])
    before = pool.k.clone()
    q = torch.randn(2, H, D)
    out = decode(pool, q, None, None, torch.zeros(2, dtype=torch.int64))
    assert torch.equal(pool.k, before)
    for b in range(2):
        keys, values = pool.keys(b)
        torch.testing.assert_close(out[b : b + 1], sdpa(q[b : b + 1], keys, values, torch.ones(1, len(keys),
                                                                                                 dtype=torch.bool)))


def test_decode_in_bfloat16_stays_within_bfloat16_of_the_float32_answer() -> None:
    pool = make_pool([7, 30], dtype=torch.bfloat16)
    q = torch.randn(2, H, D).to(torch.bfloat16)
    out = decode(pool, q, None, None, torch.zeros(2, dtype=torch.int64))
    assert out.dtype == torch.bfloat16
    for b in range(2):
        keys, values = pool.keys(b)
        expected = sdpa(q[b : b + 1], keys, values, torch.ones(1, len(keys), dtype=torch.bool))
        torch.testing.assert_close(out[b : b + 1].float(), expected, rtol=1.6e-2, atol=1e-2)


def test_decode_sliding_window_logit_cap_and_sinks() -> None:
    pool = make_pool([20, 6])
    q, sinks = torch.randn(2, H, D) * 3, torch.randn(H)
    out = decode(pool, q, None, None, torch.zeros(2, dtype=torch.int64), window=5, cap=2.0, sinks=sinks)
    for b, length in enumerate([20, 6]):
        keys, values = pool.keys(b)
        keep = (length - 1 - torch.arange(length) < 5).view(1, -1)
        torch.testing.assert_close(out[b : b + 1], explicit(q[b : b + 1], keys, values, keep, 2.0, sinks))


def random_tree_mask(n: int, generator: torch.Generator) -> torch.Tensor:
    """``[n, n]``: node 0 the root, each later node under a random earlier one; a row marks itself and ancestors."""
    parents = [-1] + [int(torch.randint(0, i, (1,), generator=generator)) for i in range(1, n)]
    mask = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        node = i
        while node != -1:
            mask[i, node], node = True, parents[node]
    return mask


def extend(pool: Pool, extend_lens: list[int], kv_given: bool, tree_mask: torch.Tensor | None = None,
           is_causal: bool = True, window: int = 0, cap: float = 0.0, sinks: torch.Tensor | None = None,
           seed: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Runs the op on new tokens whose K/V are the last ``extend_lens[b]`` of each request's slots; returns
    (q, k_extend, v_extend, out)."""
    generator = torch.Generator().manual_seed(seed)
    tokens = sum(extend_lens)
    q = torch.randn(tokens, H, D, generator=generator).to(pool.k.dtype)
    k_new = torch.cat([pool.keys(b)[0][-e:] for b, e in enumerate(extend_lens)]).to(pool.k.dtype)
    v_new = torch.cat([pool.keys(b)[1][-e:] for b, e in enumerate(extend_lens)]).to(pool.v.dtype)
    out = torch.empty(tokens, H, DV, dtype=q.dtype)
    starts = torch.tensor([sum(extend_lens[:b]) for b in range(len(extend_lens))], dtype=torch.int32)
    torch.ops.sgl_kernel.extend_attention_cpu(q, k_new if kv_given else None, v_new if kv_given else None, out, pool.k,
                                              pool.v, 1.0, 1.0, pool.req_to_token, pool.req_pool_indices,
                                              pool.seq_lens, torch.tensor(extend_lens, dtype=torch.int32), starts,
                                              max(extend_lens), SCALE, cap, False, window, None, sinks, tree_mask,
                                              is_causal)
    return q, k_new, v_new, out


def extend_keep(prefix: int, extend_len: int, block: torch.Tensor) -> torch.Tensor:
    return torch.cat([torch.ones(extend_len, prefix, dtype=torch.bool), block], dim=1)


@pytest.mark.parametrize("kv_given", [True, False], ids=["k_extend", "k_from_the_pool"])
def test_extend_causal_over_a_cached_prefix(kv_given: bool) -> None:
    seq_lens, extend_lens = [17, 4, 30], [5, 4, 11]  # the second request has no prefix
    pool = make_pool(seq_lens)
    q, _, _, out = extend(pool, extend_lens, kv_given)
    start = 0
    for b, (length, e) in enumerate(zip(seq_lens, extend_lens, strict=True)):
        keys, values = pool.keys(b)
        keep = extend_keep(length - e, e, torch.ones(e, e, dtype=torch.bool).tril())
        torch.testing.assert_close(out[start : start + e], sdpa(q[start : start + e], keys, values, keep))
        start += e


def test_extend_non_causal_sees_every_new_token() -> None:
    seq_lens, extend_lens = [9, 6], [3, 6]
    pool = make_pool(seq_lens)
    q, _, _, out = extend(pool, extend_lens, True, is_causal=False)
    for b, start in enumerate([0, 3]):
        keys, values = pool.keys(b)
        e = extend_lens[b]
        keep = torch.ones(e, seq_lens[b], dtype=torch.bool)
        torch.testing.assert_close(out[start : start + e], sdpa(q[start : start + e], keys, values, keep))


def test_extend_with_a_tree_mask_as_in_speculative_verification() -> None:
    # NGRAM's verify batch on a CPU: every request extends by the same number of drafts, the mask holds only the
    # [drafts, drafts] block of each request, and the committed prefix is fully visible
    drafts, seq_lens = 6, [14, 6, 25]
    generator = torch.Generator().manual_seed(7)
    blocks = [random_tree_mask(drafts, generator) for _ in seq_lens]
    pool = make_pool(seq_lens)
    q, _, _, out = extend(pool, [drafts] * 3, True, tree_mask=torch.stack(blocks).view(-1))
    for b, length in enumerate(seq_lens):
        keys, values = pool.keys(b)
        rows = slice(b * drafts, (b + 1) * drafts)
        torch.testing.assert_close(out[rows], sdpa(q[rows], keys, values, extend_keep(length - drafts, drafts,
                                                                                      blocks[b])))
    causal = extend(pool, [drafts] * 3, True)[3]
    assert not torch.allclose(out, causal)  # a branching tree is not the causal chain


def test_extend_takes_a_full_mask_with_the_prefix_too() -> None:
    seq_lens, extend_lens = [10, 7], [4, 3]
    generator = torch.Generator().manual_seed(3)
    full = [torch.rand(e, n, generator=generator) < 0.6 for e, n in zip(extend_lens, seq_lens, strict=True)]
    for row in full:
        row[:, -row.shape[0] :] |= torch.eye(row.shape[0], dtype=torch.bool)  # each token sees itself
    pool = make_pool(seq_lens)
    q, _, _, out = extend(pool, extend_lens, True, tree_mask=torch.cat([m.view(-1) for m in full]))
    for b, start in enumerate([0, 4]):
        keys, values = pool.keys(b)
        e = extend_lens[b]
        torch.testing.assert_close(out[start : start + e], sdpa(q[start : start + e], keys, values, full[b]))


def test_extend_sliding_window_logit_cap_and_sinks() -> None:
    seq_lens, extend_lens = [16, 8], [6, 8]
    pool = make_pool(seq_lens)
    sinks = torch.randn(H)
    q, _, _, out = extend(pool, extend_lens, True, window=4, cap=1.5, sinks=sinks)
    for b, start in enumerate([0, 6]):
        keys, values = pool.keys(b)
        length, e = seq_lens[b], extend_lens[b]
        q_pos, k_pos = torch.arange(length - e, length).view(-1, 1), torch.arange(length).view(1, -1)
        keep = (k_pos <= q_pos) & (q_pos - k_pos < 4)
        torch.testing.assert_close(out[start : start + e], explicit(q[start : start + e], keys, values, keep, 1.5,
                                                                    sinks))


def test_cross_attention_is_refused_by_name() -> None:
    pool = make_pool([3])
    q = torch.randn(1, H, D)
    with pytest.raises(NotImplementedError, match="decode_attention_cpu: cross-attention"):
        torch.ops.sgl_kernel.decode_attention_cpu(q, pool.k, pool.v, 1.0, 1.0, torch.empty(1, H, DV), None, None,
                                                  torch.zeros(1, dtype=torch.int64), torch.zeros(1, H, 8, DV + 1),
                                                  pool.req_to_token, pool.req_pool_indices, pool.seq_lens, SCALE,
                                                  0.0, True, 0, None, None)


def test_decode_logit_cap_without_a_window() -> None:
    pool = make_pool([11, 4])
    q = torch.randn(2, H, D) * 4
    out = decode(pool, q, None, None, torch.zeros(2, dtype=torch.int64), cap=1.0)
    for b in range(2):
        keys, values = pool.keys(b)
        keep = torch.ones(1, len(keys), dtype=torch.bool)
        torch.testing.assert_close(out[b : b + 1], explicit(q[b : b + 1], keys, values, keep, 1.0, None))


def test_a_query_that_sees_no_key_gets_zeros_not_nan() -> None:
    from sgl_kernel.masked_attention import attend

    keep = torch.tensor([[True, False, False], [False, False, False]])
    out = attend(torch.randn(2, H, D), torch.randn(3, H_KV, D), torch.randn(3, H_KV, DV), keep, SCALE, 0.0, None)
    assert torch.isfinite(out).all() and torch.equal(out[1], torch.zeros(H, DV))
