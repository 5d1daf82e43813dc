"""A checkpoint's weight-streaming GEMMs, timed on this machine: the measured half of the CPU step model.

A decode step of a small model on vLLM's CPU build is the engine's fixed work (scheduler, sampler, the many small
kernels: ``cpu_step``'s overhead terms) plus the GEMMs over whatever weights are large enough to leave the caches.
Those are timed here, on this machine, with the engine's own kernel family (torch's oneDNN bf16 ``linear``, what
vLLM CPU calls as ``_C::onednn_mm``) at the token counts a cell's steps will carry: a table of measured kernels, as
AIConfigurator keeps for GPUs, but measured where the prediction is made. Only matrices of at least
``LARGE_BYTES`` are timed; the rest belong to the per-step overhead the engine terms carry.

The shapes come from the checkpoint's safetensors header (no weights are read); experts count by the share of them
a token routes to (``num_experts_per_tok / n_routed_experts``), and layers past ``num_hidden_layers`` are the
checkpoint's MTP module, a drafter's cost rather than the trunk's.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

LARGE_BYTES = 4 * 2**20
"""Smaller matrices stay in cache: their cost is part of the engine's per-step overhead, not of streaming."""
TIMED_TOKENS = 256
"""The most tokens a GEMM is timed at; larger counts are extrapolated (``gemm_seconds``)."""
_LAYER = re.compile(r"\blayers\.(\d+)\.")


@dataclass(frozen=True)
class Linear:
    """One weight matrix a step multiplies by: ``out x in`` elements of ``dtype_bytes`` each, applied to
    ``share`` of the step's tokens (1 for dense layers, the routed share for an expert)."""

    out_features: int
    in_features: int
    share: float = 1.0

    @property
    def bytes(self) -> int:
        return self.out_features * self.in_features * 2


@dataclass(frozen=True)
class CheckpointShape:
    """The large matrices of a checkpoint, split into the trunk's and the MTP module's, and its total size."""

    trunk: tuple[Linear, ...]
    mtp: tuple[Linear, ...]
    weight_bytes: int

    @property
    def streamed_bytes(self) -> int:
        return sum(linear.bytes for linear in self.trunk)


def read_shape(model_dir: Path) -> CheckpointShape:
    """The checkpoint's large 2-D weights, from its safetensors headers and ``config.json`` (no tensor is read)."""
    from safetensors import safe_open  # the engines' own dependency, imported where a checkpoint is read

    config = json.loads((model_dir / "config.json").read_text())
    layers = int(config.get("num_hidden_layers", 0))
    experts = config.get("n_routed_experts") or config.get("num_experts") or 0
    routed_share = (config.get("num_experts_per_tok") or 1) / experts if experts else 1.0
    trunk: list[Linear] = []
    mtp: list[Linear] = []
    total = 0
    for path in sorted(model_dir.glob("*.safetensors")):
        with safe_open(str(path), "pt") as handle:
            for name in handle.keys():
                shape = handle.get_slice(name).get_shape()
                total += 2 * _count(shape)
                if len(shape) != 2 or 2 * shape[0] * shape[1] < LARGE_BYTES or "embed_tokens" in name:
                    continue  # an embedding is a lookup, not a GEMM
                share = routed_share if ".experts." in name else 1.0
                linear = Linear(shape[0], shape[1], share)
                layer = _LAYER.search(name)
                (mtp if layer and int(layer.group(1)) >= layers and layers else trunk).append(linear)
    return CheckpointShape(tuple(trunk), tuple(mtp), total)


def _count(shape: list[int]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def time_linear(linear: Linear, tokens: int, threads: int, budget_s: float = 0.3) -> float:
    """Median seconds of one bf16 ``linear`` of ``tokens`` rows through ``linear`` (after a warm-up), repeated
    until ``budget_s`` is spent, at least once and at most 50 times."""
    import torch  # the engine's own dependency; importing the harness stays light

    rows = max(1, round(tokens * linear.share))
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        generator = torch.Generator().manual_seed(0)
        weight = torch.randn(linear.out_features, linear.in_features, generator=generator).to(torch.bfloat16)
        x = torch.randn(rows, linear.in_features, generator=generator).to(torch.bfloat16)
        torch.nn.functional.linear(x, weight)
        trials: list[float] = []
        spent_from = time.perf_counter()
        while not trials or time.perf_counter() - spent_from < budget_s:
            start = time.perf_counter()
            torch.nn.functional.linear(x, weight)
            trials.append(time.perf_counter() - start)
            if len(trials) >= 50:
                break
        return statistics.median(trials)
    finally:
        torch.set_num_threads(previous)


def gemm_seconds(linears: tuple[Linear, ...], tokens: int, threads: int, cache: dict[str, float]) -> float:
    """Seconds one step of ``tokens`` tokens spends in ``linears`` on this machine; ``cache`` keeps every timing
    (keyed by shape, share, tokens and threads) so that a configuration's concurrencies share their kernels.

    Up to ``TIMED_TOKENS`` tokens each count is timed; beyond, a GEMM is compute-bound and its time grows linearly,
    so it is extrapolated from the slope between ``TIMED_TOKENS / 2`` and ``TIMED_TOKENS`` (a 2048-token prefill
    through a 0.2 GB layer takes over a minute on one core: timing it would cost more than the prediction is for).
    """
    total = 0.0
    for linear in linears:
        if tokens <= TIMED_TOKENS:
            total += _timed(linear, tokens, threads, cache)
            continue
        low, high = _timed(linear, TIMED_TOKENS // 2, threads, cache), _timed(linear, TIMED_TOKENS, threads, cache)
        total += high + (high - low) / (TIMED_TOKENS // 2) * (tokens - TIMED_TOKENS)
    return total


def _timed(linear: Linear, tokens: int, threads: int, cache: dict[str, float]) -> float:
    key = f"{linear.out_features}x{linear.in_features}@{linear.share:g}/{tokens}t/{threads}"
    if key not in cache:
        cache[key] = time_linear(linear, tokens, threads)
    return cache[key]
