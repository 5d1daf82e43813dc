"""Per-layer, per-expert routing counts from inside a vLLM worker, for ``/collective_rpc``.

Loaded by vLLM as its worker extension (``--worker-extension-cls harness_vllm_expert_load.ExpertLoadWorker``; this
directory on the server's ``PYTHONPATH``): the class's methods become the worker's, and vLLM's dev-mode route
``POST /collective_rpc`` (``VLLM_SERVER_DEV_MODE=1``) calls them on every worker by name. Checked against vLLM
0.32.0 (``VLLM_VERSION``); ``tests/contract`` reads vLLM's source for every name used here.

The counts come from the seam vLLM's own routed-experts capturer uses: each ``MoERunner``'s router (a
``BaseRouter``) calls ``capture_fn(topk_ids)`` with the logical expert ids chosen for every row of the batch, before
any EPLB remapping. The hook adds them into a per-layer counter on the ids' own device (``scatter_add_``: no host
sync, and a fixed shape, so a CUDA graph captured with it replays the add), padding rows weighted 0 where the forward
context marks them. A capture function vLLM installed first is still called.

What is not counted: a layer whose MoE kernel routes inside one fused kernel never calls the router (``layers``
lists only the hooked ones, so such a layer is reported as not measured); radix or prefix-cache hits are not
computed, so not routed. Under tensor parallelism every rank routes the same rows (the harness keeps rank 0's);
under data or expert parallelism each DP rank routes its own (the harness adds them).
"""

from __future__ import annotations

import time
from typing import Any

import torch

VLLM_VERSION = "0.32.0"
"""The vLLM release whose internals this module was checked against."""


class ExpertLoadWorker:
    """Methods added to vLLM's worker: ``expert_load_reset`` (hook the routers once, zero the counts) and
    ``expert_load_read`` (the counts since the last reset, as JSON-able lists)."""

    def expert_load_reset(self) -> dict[str, Any]:
        """Hook every MoE router (the first call only), then zero every counter; returns how many layers are
        hooked."""
        state = self._expert_load_state()
        for counts in state["counts"].values():
            counts.zero_()
        for rows in state["rows"].values():
            rows.zero_()
        state["seconds"] = 0.0
        state["calls"] = 0
        return {"layers": len(state["counts"])}

    def expert_load_read(self) -> dict[str, Any]:
        """The counts since the last reset: ``counts[i]`` per expert of layer ``layers[i]``, ``rows[i]`` the
        unpadded rows routed there (each row picks ``top_k`` experts), and the time spent inside the hook."""
        state = self._expert_load_state()
        layers = sorted(state["counts"])
        from vllm.distributed.parallel_state import get_tensor_model_parallel_rank

        parallel = self.vllm_config.parallel_config  # type: ignore[attr-defined]
        return {
            "layers": layers,
            "experts": state["experts"],
            "top_k": state["top_k"],
            "counts": [state["counts"][layer].tolist() for layer in layers],
            "rows": [int(state["rows"][layer].item()) for layer in layers],
            "hook_seconds": state["seconds"],
            "hook_calls": state["calls"],
            "tp_rank": int(get_tensor_model_parallel_rank()),
            "dp_rank": int(parallel.data_parallel_rank),
            "engine": f"vllm {VLLM_VERSION}",
        }

    def _expert_load_state(self) -> dict[str, Any]:
        state: dict[str, Any] | None = getattr(self, "_harness_expert_load", None)
        if state is None:
            state = {"counts": {}, "rows": {}, "experts": 0, "top_k": 0, "seconds": 0.0, "calls": 0}
            self._harness_expert_load = state
            _hook_routers(self.model_runner.get_model(), state)  # type: ignore[attr-defined]
        return state


def _hook_routers(model: torch.nn.Module, state: dict[str, Any]) -> None:
    from vllm.model_executor.layers.fused_moe.router.base_router import BaseRouter
    from vllm.model_executor.layers.fused_moe.runner.moe_runner import MoERunner

    for module in model.modules():
        if not isinstance(module, MoERunner) or not isinstance(module.router, BaseRouter):
            continue
        router, layer = module.router, int(module.layer_id)
        device = next((p.device for p in module.parameters()), torch.device("cpu"))
        state["counts"][layer] = torch.zeros(router.global_num_experts, dtype=torch.int64, device=device)
        state["rows"][layer] = torch.zeros((), dtype=torch.int64, device=device)
        state["experts"], state["top_k"] = int(router.global_num_experts), int(router.top_k)
        router.set_capture_fn(_counter(layer, state, router.capture_fn))


def _counter(layer: int, state: dict[str, Any], chained: Any) -> Any:
    def capture(topk_ids: torch.Tensor) -> None:
        start = time.perf_counter()
        weights = torch.ones(topk_ids.shape[0], dtype=torch.int64, device=topk_ids.device)
        padding = _padding_mask(topk_ids.shape[0])
        if padding is not None:
            weights = weights.masked_fill(padding.to(topk_ids.device), 0)
        state["counts"][layer].scatter_add_(0, topk_ids.reshape(-1).long(),
                                            weights.repeat_interleave(topk_ids.shape[1]))
        state["rows"][layer] += weights.sum()
        state["seconds"] += time.perf_counter() - start
        state["calls"] += 1
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
