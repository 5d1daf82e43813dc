"""``sgl_kernel.speculative``, as SGLang imports it: ``reconstruct_indices_from_tree_mask`` for n-gram speculation.

SGLang 0.5.23 calls it from ``reconstruct_indices_from_tree_mask_func`` (``kernels/ops/speculative/
reconstruct_tree.py``) with the draft tree of each request as a flat bool mask, and reads back the positions and the
tree links that verification walks (``tree_verify.py``). The semantics are the ones that file's docstring and Triton
kernel state, per request ``b`` and node ``i`` (``n`` = ``draft_token_num``), ``mask[b, i, j]`` marking ``j`` an
ancestor of ``i`` (the diagonal may be set; only ``j < i`` counts):

- ``positions[b * n + i] = verified_seq_len[b] + #ancestors(i)``;
- ``retrive_index[b, i] = b * n + i``;
- ``parent(i)`` = the largest ancestor, or -1 for the root;
- ``retrive_next_token[b, i]`` = the smallest ``k > i`` having ``i`` as an ancestor (first child), else -1;
- ``retrive_next_sibling[b, i]`` = the smallest ``k > i`` with the same parent, else -1 (also -1 for the root).
"""

from __future__ import annotations

import torch

__all__ = ["reconstruct_indices_from_tree_mask"]


def reconstruct_indices_from_tree_mask(
    tree_mask: torch.Tensor,
    verified_seq_len: torch.Tensor,
    positions: torch.Tensor,
    retrive_index: torch.Tensor,
    retrive_next_token: torch.Tensor,
    retrive_next_sibling: torch.Tensor,
    batch_size: int,
    draft_token_num: int,
) -> None:
    """Writes ``positions`` (``[bs * n]``) and ``retrive_index``, ``retrive_next_token``, ``retrive_next_sibling``
    (``[bs, n]``) in place, for the first ``batch_size`` requests. All are addressed flat, ``b * n + i``, as the
    kernel's pointers are: they must be contiguous."""
    bs, n = batch_size, draft_token_num
    if bs == 0:
        return
    device = tree_mask.device
    mask = tree_mask.reshape(-1)[: bs * n * n].view(bs, n, n).to(torch.bool)
    node = torch.arange(n, device=device)
    # ancestors[b, i, j]: j is a strict ancestor of i
    ancestors = mask & (node.view(1, 1, n) < node.view(1, n, 1))
    sentinel = torch.full((1, 1, 1), n, dtype=torch.int64, device=device)

    depth = ancestors.sum(dim=2)
    seq_len = verified_seq_len[:bs].to(torch.int64).view(bs, 1)
    positions.view(-1)[: bs * n].copy_((depth + seq_len).view(-1).to(positions.dtype))

    flat = torch.arange(bs * n, dtype=torch.int64, device=device).view(bs, n)
    retrive_index.view(-1)[: bs * n].copy_(flat.view(-1).to(retrive_index.dtype))

    parent = torch.where(ancestors, node.view(1, 1, n), -1).amax(dim=2)  # [bs, n], -1 for a root

    # first child of i: the smallest row k whose ancestors include column i
    child = torch.where(ancestors, node.view(1, n, 1), sentinel).amin(dim=1)
    next_token = torch.where(child < n, child, -1)
    retrive_next_token.view(-1)[: bs * n].copy_(next_token.view(-1).to(retrive_next_token.dtype))

    # next sibling of i: the smallest k > i with parent[k] == parent[i], for a non-root i
    same_parent = (parent.view(bs, n, 1) == parent.view(bs, 1, n)) & (node.view(1, n, 1) > node.view(1, 1, n))
    sibling = torch.where(same_parent, node.view(1, n, 1), sentinel).amin(dim=1)
    next_sibling = torch.where((parent >= 0) & (sibling < n), sibling, -1)
    retrive_next_sibling.view(-1)[: bs * n].copy_(next_sibling.view(-1).to(retrive_next_sibling.dtype))
