"""Draft trees built by hand: ``speculative.reconstruct_indices_from_tree_mask`` derives positions and tree links from
the ancestor mask, and ``verify_tree_greedy_cpu`` walks them against the target model's greedy predictions, both as
SGLang's Triton kernels state (``kernels/ops/speculative/reconstruct_tree.py`` and ``spec_tree.py``)."""

from __future__ import annotations

import torch

from sgl_kernel import verify_tree_greedy_cpu
from sgl_kernel.speculative import reconstruct_indices_from_tree_mask

N = 5
# request 0, a tree:      request 1, a chain:
#   0 -+- 1 -- 3           0 - 1 - 2 - 3 - 4
#      +- 2 -- 4
PARENTS = [[-1, 0, 0, 1, 2], [-1, 0, 1, 2, 3]]


def ancestor_mask(parents: list[int]) -> torch.Tensor:
    """``[n, n]`` bool, row i marking i itself and its ancestors (the diagonal set, as NGRAM's mask has it)."""
    mask = torch.zeros(len(parents), len(parents), dtype=torch.bool)
    for i in range(len(parents)):
        node = i
        while node != -1:
            mask[i, node] = True
            node = parents[node]
    return mask


def reconstruct(seq_lens: list[int]) -> dict[str, torch.Tensor]:
    bs = len(PARENTS)
    tree_mask = torch.stack([ancestor_mask(p) for p in PARENTS]).view(-1)
    out = {"positions": torch.full((bs * N,), -9, dtype=torch.int64)}
    out |= {k: torch.full((bs, N), -9, dtype=torch.int64) for k in ("index", "next_token", "next_sibling")}
    reconstruct_indices_from_tree_mask(tree_mask, torch.tensor(seq_lens), out["positions"], out["index"],
                                       out["next_token"], out["next_sibling"], bs, N)
    return out


def test_reconstruct_gives_depth_positions_flat_indices_first_children_and_next_siblings() -> None:
    out = reconstruct([10, 3])
    assert out["positions"].tolist() == [10, 11, 11, 12, 12, 3, 4, 5, 6, 7]
    assert out["index"].tolist() == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert out["next_token"].tolist() == [[1, 3, 4, -1, -1], [1, 2, 3, 4, -1]]
    assert out["next_sibling"].tolist() == [[-1, 2, -1, -1, -1], [-1, -1, -1, -1, -1]]


def test_reconstruct_ignores_the_diagonal_and_writes_only_the_batch() -> None:
    without_diagonal = torch.stack([ancestor_mask(p) & ~torch.eye(N, dtype=torch.bool) for p in PARENTS]).view(-1)
    positions = torch.full((3 * N,), -9, dtype=torch.int64)
    links = [torch.full((3, N), -9, dtype=torch.int64) for _ in range(3)]
    reconstruct_indices_from_tree_mask(without_diagonal, torch.tensor([10, 3]), positions, *links, 2, N)
    expected = reconstruct([10, 3])
    assert positions[: 2 * N].tolist() == expected["positions"].tolist() and positions[2 * N :].eq(-9).all()
    assert links[1][:2].tolist() == expected["next_token"].tolist() and links[1][2].eq(-9).all()


def verify(candidates: list[list[int]], target: list[list[int]], depth: int) -> tuple[list[int], list[list[int]],
                                                                                      list[int]]:
    links = reconstruct([10, 3])
    predicts = torch.zeros(2 * N, dtype=torch.int32)
    accept_index = torch.full((2, depth), -1, dtype=torch.int32)
    accept_num = torch.empty(2, dtype=torch.int32)
    verify_tree_greedy_cpu(predicts=predicts, accept_index=accept_index, accept_token_num=accept_num,
                           candidates=torch.tensor(candidates), retrive_index=links["index"],
                           retrive_next_token=links["next_token"], retrive_next_sibling=links["next_sibling"],
                           target_predict=torch.tensor(target))
    return predicts.tolist(), accept_index.tolist(), accept_num.tolist()


def test_greedy_verification_follows_the_matching_branch_and_adds_the_bonus_token() -> None:
    # request 0: after the root the target says 60; node 1 drafts 50, its sibling node 2 drafts 60 (accepted);
    # after node 2 the target says 80, node 4 drafts 80 (accepted); after node 4 the target says 99: bonus.
    # request 1: the chain drafts 1, 2, 3, 4; the target agrees on 1 and 2, then says 7 where 3 was drafted.
    candidates = [[0, 50, 60, 70, 80], [0, 1, 2, 3, 4]]
    target = [[60, 0, 80, 0, 99], [1, 2, 7, 0, 0]]
    predicts, accept_index, accept_num = verify(candidates, target, depth=4)
    assert accept_num == [2, 2]
    assert accept_index == [[0, 2, 4, -1], [5, 6, 7, -1]]
    assert predicts == [60, 0, 80, 0, 99, 1, 2, 7, 0, 0]


def test_nothing_accepted_leaves_only_the_bonus_token() -> None:
    predicts, accept_index, accept_num = verify([[0, 50, 60, 70, 80], [0, 1, 2, 3, 4]],
                                                [[11, 0, 0, 0, 0], [12, 0, 0, 0, 0]], depth=4)
    assert accept_num == [0, 0]
    assert accept_index == [[0, -1, -1, -1], [5, -1, -1, -1]]
    assert predicts == [11, 0, 0, 0, 0, 12, 0, 0, 0, 0]


def test_acceptance_stops_at_the_width_of_accept_index() -> None:
    # the chain would accept all four drafts; accept_index has room for the root and two
    predicts, accept_index, accept_num = verify([[0, 50, 60, 70, 80], [0, 1, 2, 3, 4]],
                                                [[0, 0, 0, 0, 0], [1, 2, 3, 4, 5]], depth=3)
    assert accept_num[1] == 2 and accept_index[1] == [5, 6, 7]
    assert predicts[5:] == [1, 2, 3, 0, 0]  # the bonus token is the prediction after the last accepted node
