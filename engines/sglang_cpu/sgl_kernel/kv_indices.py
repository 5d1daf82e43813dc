"""The KV-index copies speculative decoding makes on a CPU: between a request's row of ``req_to_token`` (the slots of
its tokens in the KV pool) and flat lists of slots (``out_cache_loc``), all in place.

Each follows SGLang 0.5.23's Triton kernel of the same name without ``_cpu`` (``assign_req_to_token_pool`` in
``srt/mem_cache/allocation.py``; ``assign_extend_cache_locs``, ``assign_draft_cache_locs_contiguous`` in
``kernels/ops/speculative/cache_locs.py``; ``fill_bonus_tokens``, ``fill_accept_out_cache_loc`` in
``kernels/ops/speculative/eagle.py``), with the argument order of SGLang's CPU call sites. Rows are addressed as the
kernels do, ``req_to_token.view(-1)[req * pool_len + position]``, so ``pool_len`` means what it means there.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch


def _ints(tensor: torch.Tensor) -> list[int]:
    return [int(x) for x in tensor.reshape(-1).tolist()]


def _row_slice(req_to_token: torch.Tensor, req: int, pool_len: int, start: int, end: int) -> torch.Tensor:
    """Positions ``[start, end)`` of request row ``req``, as a view of ``req_to_token``."""
    return req_to_token.view(-1)[req * pool_len + start : req * pool_len + end]


def _segments(req_pool_indices: torch.Tensor, req_to_token: torch.Tensor, start_offset: torch.Tensor,
              end_offset: torch.Tensor, out_cache_loc: torch.Tensor,
              pool_len: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Each non-empty request's row view ``req_to_token[req_i, start_i:end_i]`` beside its flat view
    ``out_cache_loc[o_i : o_i + end_i - start_i]``, ``o_i`` summing the earlier requests' ``end - start`` as the
    kernels do; both copies walk these, in opposite directions."""
    offset = 0
    for req, start, end in zip(_ints(req_pool_indices), _ints(start_offset), _ints(end_offset), strict=True):
        length = end - start
        if length > 0:
            yield _row_slice(req_to_token, req, pool_len, start, end), out_cache_loc[offset : offset + length]
        offset += length


def assign_req_to_token_pool_cpu(
    req_pool_indices: torch.Tensor,
    req_to_token: torch.Tensor,
    start_offset: torch.Tensor,
    end_offset: torch.Tensor,
    out_cache_loc: torch.Tensor,
    pool_len: int,
) -> None:
    """``req_to_token[req_i, start_i:end_i] = out_cache_loc[o_i : o_i + end_i - start_i]``, where ``o_i`` sums the
    earlier requests' lengths (writes ``req_to_token``)."""
    for row, flat in _segments(req_pool_indices, req_to_token, start_offset, end_offset, out_cache_loc, pool_len):
        row.copy_(flat)


def assign_extend_cache_locs_cpu(
    req_pool_indices: torch.Tensor,
    req_to_token: torch.Tensor,
    start_offset: torch.Tensor,
    end_offset: torch.Tensor,
    out_cache_loc: torch.Tensor,
    pool_len: int,
) -> None:
    """The reverse copy: ``out_cache_loc[o_i : o_i + end_i - start_i] = req_to_token[req_i, start_i:end_i]``
    (writes ``out_cache_loc``)."""
    for row, flat in _segments(req_pool_indices, req_to_token, start_offset, end_offset, out_cache_loc, pool_len):
        flat.copy_(row)


def assign_draft_cache_locs_contiguous_cpu(
    req_pool_indices: torch.Tensor,
    req_to_token: torch.Tensor,
    seq_lens: torch.Tensor,
    out_cache_loc: torch.Tensor,
    pool_len: int,
    topk: int,
    speculative_num_steps: int,
) -> None:
    """Request ``i``'s ``topk * speculative_num_steps`` slots from position ``seq_lens[i]`` on, into
    ``out_cache_loc[i * topk * steps :]`` (writes ``out_cache_loc``)."""
    width = topk * speculative_num_steps
    for i, (req, start) in enumerate(zip(_ints(req_pool_indices), _ints(seq_lens), strict=True)):
        out_cache_loc[i * width : (i + 1) * width].copy_(_row_slice(req_to_token, req, pool_len, start, start + width))


def fill_bonus_tokens_cpu(
    accept_tokens: torch.Tensor,
    accept_lens: torch.Tensor,
    bonus_tokens: torch.Tensor,
    accept_stride: int,
) -> None:
    """``bonus_tokens[i] = accept_tokens.flat[accept_stride * i + accept_lens[i] - 1]``: the last accepted token of
    each request, ``accept_lens`` counting the bonus token itself (writes ``bonus_tokens``)."""
    lens = accept_lens.reshape(-1).to(torch.int64)
    rows = torch.arange(lens.numel(), dtype=torch.int64, device=lens.device)
    bonus_tokens.copy_(accept_tokens.reshape(-1)[rows * accept_stride + lens - 1].to(bonus_tokens.dtype))


def fill_accept_out_cache_loc_cpu(
    accept_index: torch.Tensor,
    out_cache_loc: torch.Tensor,
    accept_out_cache_loc: torch.Tensor,
) -> None:
    """The slots of the accepted tokens, packed: for each ``accept_index`` entry ``src`` other than -1, in order,
    ``accept_out_cache_loc[k] = out_cache_loc[src]`` where ``k`` counts the accepted entries before it (writes the
    first ``k`` entries of ``accept_out_cache_loc`` and leaves the rest)."""
    flat = accept_index.reshape(-1).to(torch.int64)
    accepted = flat[flat != -1]
    accept_out_cache_loc[: accepted.numel()].copy_(out_cache_loc[accepted].to(accept_out_cache_loc.dtype))
