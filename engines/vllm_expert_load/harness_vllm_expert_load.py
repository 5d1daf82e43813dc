"""Per-layer, per-expert routing counts from inside a vLLM worker, for ``/collective_rpc``.

Loaded by vLLM as its worker extension (``--worker-extension-cls harness_vllm_expert_load.ExpertLoadWorker``; this
directory on the server's ``PYTHONPATH``): the class's methods become the worker's, and vLLM's dev-mode route
``POST /collective_rpc`` (``VLLM_SERVER_DEV_MODE=1``) calls them on every worker by name. Checked against vLLM
0.32.0 (``VLLM_VERSION``); ``tests/contract`` reads vLLM's source for every name used here.

The counts come from the seam vLLM's own routed-experts capturer uses: each ``MoERunner``'s router (a
``BaseRouter``) calls ``capture_fn(topk_ids)`` with the logical expert ids chosen for every row of the batch, before
any EPLB remapping. The hook must be on the router before the model's forward is compiled: vLLM's torch.compile
traces the router once and then runs the graph without re-checking it, so a hook set afterwards is never called. vLLM
resolves its worker extension in the worker process before it builds the model, so importing this module wraps
``MoERunner.__init__``, and every router is built with the hook. The hook calls one custom op
(``harness_expert_load::count``), which the compiled graph calls as it is at every step: it adds the ids into a
per-layer counter on their device (``scatter_add_``, rows that vLLM's forward context marks as padding weighted 0)
and times itself. Under a CUDA graph's replay its adds replay but its Python does not (no mask, no clock): the
hook's time is then not known. A capture function vLLM installs later chains onto it.

What is not counted: a layer whose MoE kernel routes inside one fused kernel never calls the router (``layers``
lists only the hooked ones); prefix-cache hits are not computed, so not routed. Under tensor parallelism every rank
routes the same rows (the harness keeps rank 0's); under data or expert parallelism each DP rank routes its own (the
harness adds them).
"""

from __future__ import annotations

import time
from typing import Any

import torch

VLLM_VERSION = "0.32.0"
"""The vLLM release whose internals this module was checked against."""

_STATE: dict[str, Any] = {"counts": {}, "rows": {}, "experts": 0, "top_k": 0, "seconds": 0.0, "calls": 0}
"""This worker's counters: MoE layer index -> int64 tensor of counts per expert (and of rows routed), and the hook's
own time and calls where it ran eagerly."""


class ExpertLoadWorker:
    """Methods added to vLLM's worker: ``expert_load_reset`` (zero the counts) and ``expert_load_read`` (the counts
    since the last reset, as JSON-able lists)."""

    def expert_load_reset(self) -> dict[str, Any]:
        """Zero every counter; returns how many layers are hooked."""
        for counts in _STATE["counts"].values():
            counts.zero_()
        for rows in _STATE["rows"].values():
            rows.zero_()
        _STATE["seconds"], _STATE["calls"] = 0.0, 0
        return {"layers": len(_STATE["counts"])}

    def expert_load_read(self) -> dict[str, Any]:
        """The counts since the last reset: ``counts[i]`` per expert of layer ``layers[i]``, ``rows[i]`` the rows
        routed there (each row picks ``top_k`` experts), and the hook's own time where it ran eagerly (None when no
        call was timed: a compiled graph ran it)."""
        from vllm.distributed.parallel_state import get_tensor_model_parallel_rank

        layers = sorted(_STATE["counts"])
        parallel = self.vllm_config.parallel_config  # type: ignore[attr-defined]
        return {
            "layers": layers,
            "experts": _STATE["experts"],
            "top_k": _STATE["top_k"],
            "counts": [_STATE["counts"][layer].tolist() for layer in layers],
            "rows": [int(_STATE["rows"][layer].item()) for layer in layers],
            "hook_seconds": _STATE["seconds"] if _STATE["calls"] else None,
            "hook_calls": _STATE["calls"],
            "tp_rank": int(get_tensor_model_parallel_rank()),
            "dp_rank": int(parallel.data_parallel_rank),
            "engine": f"vllm {VLLM_VERSION}",
        }


@torch.library.custom_op("harness_expert_load::count", mutates_args=("counts", "rows"))
def _count(topk_ids: torch.Tensor, counts: torch.Tensor, rows: torch.Tensor) -> None:
    """Add one batch's routing into a layer's counters, padding rows weighted 0, and time it. A custom op: vLLM's
    compiled graph calls it as it is at every step (it cannot trace into it), so the mask and the clock run there
    too; only a CUDA graph's replay skips its Python (the adds replay, the clock does not)."""
    start = time.perf_counter()
    weights = torch.ones(topk_ids.shape[0], dtype=torch.int64, device=topk_ids.device)
    padding = _padding_mask(topk_ids.shape[0])
    if padding is not None:
        weights = weights.masked_fill(padding.to(topk_ids.device), 0)
    counts.scatter_add_(0, topk_ids.reshape(-1).long(), weights.repeat_interleave(topk_ids.shape[1]))
    rows.add_(weights.sum())
    _STATE["seconds"] += time.perf_counter() - start
    _STATE["calls"] += 1


@_count.register_fake
def _(topk_ids: torch.Tensor, counts: torch.Tensor, rows: torch.Tensor) -> None:
    return None


def _counter(layer: int, chained: Any) -> Any:
    counts, rows = _STATE["counts"][layer], _STATE["rows"][layer]

    def capture(topk_ids: torch.Tensor) -> None:
        torch.ops.harness_expert_load.count(topk_ids, counts, rows)
        if chained is not None:
            chained(topk_ids)

    return capture


def _padding_mask(rows: int) -> torch.Tensor | None:
    """The forward context's mask of padding rows (True: not a real token), where it has one of this length."""
    from vllm.forward_context import get_forward_context, is_forward_context_available

    if not is_forward_context_available():
        return None
    mask = getattr(get_forward_context(), "is_padding", None)
    return mask if isinstance(mask, torch.Tensor) and mask.shape[0] == rows else None


def _hook(runner: Any) -> None:
    """Put the counter on one MoE runner's router (built on the device the model is being built on)."""
    from vllm.model_executor.layers.fused_moe.router.base_router import BaseRouter

    router = runner.router
    if not isinstance(router, BaseRouter):
        return
    layer = int(runner.layer_id)
    _STATE["counts"][layer] = torch.zeros(router.global_num_experts, dtype=torch.int64)
    _STATE["rows"][layer] = torch.zeros((), dtype=torch.int64)
    _STATE["experts"], _STATE["top_k"] = int(router.global_num_experts), int(router.top_k)
    chained = router.capture_fn

    def set_capture_fn(capture_fn: Any) -> None:  # one vLLM installs later (its own capturer) runs after ours
        BaseRouter.set_capture_fn(router, _counter(layer, capture_fn))

    router.set_capture_fn = set_capture_fn
    router.capture_fn = _counter(layer, chained)


def _wrap_runners() -> None:
    """Hook every ``MoERunner`` built from now on, once per process."""
    from vllm.model_executor.layers.fused_moe.runner.moe_runner import MoERunner

    if getattr(MoERunner.__init__, "_harness_expert_load", False):
        return
    built = MoERunner.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        built(self, *args, **kwargs)
        _hook(self)

    __init__._harness_expert_load = True  # type: ignore[attr-defined]
    MoERunner.__init__ = __init__  # type: ignore[method-assign]


_wrap_runners()
