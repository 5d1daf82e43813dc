"""The KV-index copies on hand-built cases, each against what SGLang's Triton kernel of the same name writes: a
``req_to_token`` table of three request rows, requests taken out of row order, one of them of length zero."""

from __future__ import annotations

import torch

from sgl_kernel import (
    assign_draft_cache_locs_contiguous_cpu,
    assign_extend_cache_locs_cpu,
    assign_req_to_token_pool_cpu,
    fill_accept_out_cache_loc_cpu,
    fill_bonus_tokens_cpu,
)

POOL_LEN = 8


def table() -> torch.Tensor:
    """Row r, position p holds 100 * r + p: every slot says where it came from."""
    rows = torch.arange(3, dtype=torch.int32).view(3, 1) * 100
    return rows + torch.arange(POOL_LEN, dtype=torch.int32).view(1, POOL_LEN)


def test_assign_req_to_token_pool_writes_each_requests_span_from_the_flat_slots() -> None:
    req_to_token = torch.zeros(3, POOL_LEN, dtype=torch.int32)
    req_pool_indices = torch.tensor([2, 0, 1])
    start = torch.tensor([1, 3, 5])
    end = torch.tensor([4, 3, 7])  # lengths 3, 0, 2
    out_cache_loc = torch.tensor([11, 12, 13, 21, 22], dtype=torch.int64)

    assign_req_to_token_pool_cpu(req_pool_indices, req_to_token, start, end, out_cache_loc, POOL_LEN)

    expected = torch.zeros(3, POOL_LEN, dtype=torch.int32)
    expected[2, 1:4] = torch.tensor([11, 12, 13], dtype=torch.int32)
    expected[1, 5:7] = torch.tensor([21, 22], dtype=torch.int32)
    assert torch.equal(req_to_token, expected)


def test_assign_extend_cache_locs_gathers_each_requests_span_in_order() -> None:
    req_pool_indices = torch.tensor([1, 2, 0])
    start = torch.tensor([2, 0, 6])
    end = torch.tensor([5, 2, 8])
    out_cache_loc = torch.full((7,), -1, dtype=torch.int64)

    assign_extend_cache_locs_cpu(req_pool_indices, table(), start, end, out_cache_loc, POOL_LEN)

    assert out_cache_loc.tolist() == [102, 103, 104, 200, 201, 6, 7]


def test_assign_extend_cache_locs_then_assign_req_to_token_pool_round_trips() -> None:
    req_pool_indices, start, end = torch.tensor([0, 2]), torch.tensor([1, 4]), torch.tensor([5, 8])
    slots = torch.empty(8, dtype=torch.int64)
    assign_extend_cache_locs_cpu(req_pool_indices, table(), start, end, slots, POOL_LEN)
    rebuilt = torch.zeros(3, POOL_LEN, dtype=torch.int32)
    assign_req_to_token_pool_cpu(req_pool_indices, rebuilt, start, end, slots, POOL_LEN)
    assert torch.equal(rebuilt[0, 1:5], table()[0, 1:5]) and torch.equal(rebuilt[2, 4:8], table()[2, 4:8])
    assert int(rebuilt[1].abs().sum()) == 0


def test_assign_draft_cache_locs_contiguous_copies_topk_times_steps_slots_from_seq_len() -> None:
    req_pool_indices, seq_lens = torch.tensor([2, 0]), torch.tensor([3, 1])
    out_cache_loc = torch.empty(2 * 2 * 2, dtype=torch.int64)

    assign_draft_cache_locs_contiguous_cpu(req_pool_indices, table(), seq_lens, out_cache_loc, POOL_LEN, 2, 2)

    assert out_cache_loc.tolist() == [203, 204, 205, 206, 1, 2, 3, 4]


def test_fill_bonus_tokens_takes_each_requests_last_accepted_token() -> None:
    accept_tokens = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]])
    accept_lens = torch.tensor([1, 4, 2], dtype=torch.int32)  # the bonus token included
    bonus = torch.empty(3, dtype=torch.int32)

    fill_bonus_tokens_cpu(accept_tokens, accept_lens, bonus, 4)

    assert bonus.tolist() == [5, 12, 14]


def test_fill_accept_out_cache_loc_packs_the_accepted_slots_and_leaves_the_rest() -> None:
    accept_index = torch.tensor([[0, 2, -1], [4, -1, -1], [6, 7, 8]], dtype=torch.int32)
    out_cache_loc = torch.arange(9, dtype=torch.int64) * 10 + 1000
    packed = torch.full((9,), -7, dtype=torch.int64)

    fill_accept_out_cache_loc_cpu(accept_index, out_cache_loc, packed)

    assert packed.tolist() == [1000, 1020, 1040, 1060, 1070, 1080, -7, -7, -7]
