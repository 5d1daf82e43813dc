"""``verify_tree_greedy_cpu``: greedy verification of a draft token tree, in place.

Follows SGLang 0.5.23's ``verify_tree_greedy_kernel_triton`` (``kernels/ops/speculative/spec_tree.py``), called by
``verify_tree_greedy_func`` with keyword arguments (the ``retrive_*`` spelling is the op schema's). Per request,
starting at the tree's root: go to the first child, walk its siblings until one's draft token equals the target
model's prediction at the last accepted node, accept it and descend; stop when no child matches or the tree (or
``accept_index``'s width) ends. Then the prediction at the last accepted node becomes the bonus token.

Shapes (``bs`` requests, ``n`` draft tokens each, ``d`` = ``accept_index.shape[1]``): ``candidates``,
``retrive_*`` and ``target_predict`` are ``[bs, n]``; ``retrive_index`` holds flat indices ``b * n + i``, which also
index ``predicts`` (``[bs * n]``) and ``target_predict`` flattened.
"""

from __future__ import annotations

import torch


def verify_tree_greedy_cpu(
    predicts: torch.Tensor,
    accept_index: torch.Tensor,
    accept_token_num: torch.Tensor,
    candidates: torch.Tensor,
    retrive_index: torch.Tensor,
    retrive_next_token: torch.Tensor,
    retrive_next_sibling: torch.Tensor,
    target_predict: torch.Tensor,
) -> None:
    """Writes ``predicts`` (the accepted tokens and the bonus token at their flat positions), ``accept_index``
    (``[bs, d]``: the accepted nodes' flat indices, root first; entries past the last accepted are left as they
    were) and ``accept_token_num`` (``[bs]``: accepted draft tokens, the root and bonus not counted)."""
    bs, num_draft = candidates.shape
    depth = accept_index.shape[1]
    cand = candidates.reshape(bs, num_draft).tolist()
    index = retrive_index.reshape(bs, num_draft).tolist()
    next_token = retrive_next_token.reshape(bs, num_draft).tolist()
    next_sibling = retrive_next_sibling.reshape(bs, num_draft).tolist()
    target = target_predict.reshape(-1).tolist()
    flat_predicts = predicts.view(-1)

    for b in range(bs):
        last = index[b][0]
        accept_index[b, 0] = last
        accepted = 0
        cur = 0
        for _ in range(1, depth):
            cur = next_token[b][cur]
            target_token = target[last]
            while cur != -1 and cand[b][cur] != target_token:
                cur = next_sibling[b][cur]
            if cur == -1:
                break
            flat_predicts[last] = target_token
            accepted += 1
            last = index[b][cur]
            accept_index[b, accepted] = last
        accept_token_num[b] = accepted
        flat_predicts[last] = target[last]
