"""A checkpoint's weight-streaming GEMMs, timed on this machine: the measured half of the CPU step model.

A decode step of a small model on vLLM's CPU build is the engine's fixed work (scheduler, sampler, the many small
kernels: ``cpu_step``'s overhead terms) plus the GEMMs over whatever weights are large enough to leave the caches.
Those are timed here, on this machine, with the engine's own kernel family (torch's oneDNN bf16 ``linear``, what
vLLM CPU calls as ``_C::onednn_mm``) at the token counts a cell's steps will carry: a table of measured kernels, as
AIConfigurator keeps for GPUs, but measured where the prediction is made. Matrices of at least ``LARGE_BYTES``
stream from memory each step (``trunk``) and are timed. The smaller ones stay in cache, and their cost is compute
that the engine's own kernels (fused MoE, oneDNN) do faster than a lone ``linear`` call shows: they are counted in
FLOPs (``small``, and an LM head below the bound), which the step model prices at a rate fitted on measured cells.
A 3-layer 4 MB model prefills 2.7x slower than a 2-layer 2 MB one here (4.3x beyond the engine's fixed costs);
their cached-matrix FLOPs a token differ 3.9x.

The shapes come from the checkpoint's safetensors header (no weights are read). A large expert counts by the share
of tokens routed to it (``num_experts_per_tok / n_routed_experts``: its weights stream whenever any token goes
there); the small experts of one layer and projection count as one matrix applied to ``num_experts_per_tok`` rows a
token, as the engine's fused MoE kernel computes them in one call. Layers past ``num_hidden_layers`` are the
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
_EXPERT = re.compile(r"\.experts\.\d+\.")


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
    """The large matrices of a checkpoint, split into the trunk's and the MTP module's, the trunk's small ones, its
    depth and its total size."""

    trunk: tuple[Linear, ...]
    mtp: tuple[Linear, ...]
    weight_bytes: int
    small: tuple[Linear, ...] = ()
    layers: int = 1
    head: tuple[Linear, ...] = ()
    """The LM head: applied to the rows that need logits (one a sequence, k+1 when verifying), not to every token."""
    small_int8: tuple[Linear, ...] = ()
    """Cached matrices stored as int8 (a W8A8 export's): the engine runs them on its int8 kernels, at another rate."""

    @property
    def streamed_head(self) -> tuple[Linear, ...]:
        return tuple(m for m in self.head if m.bytes >= LARGE_BYTES)

    @property
    def cached_head(self) -> tuple[Linear, ...]:
        return tuple(m for m in self.head if m.bytes < LARGE_BYTES)


def mflop(linears: tuple[Linear, ...], rows: int, ranks: int = 1) -> float:
    """Millions of multiply-adds x 2 one of ``ranks`` ranks computes through ``linears`` for ``rows`` tokens."""
    return sum(2.0 * m.out_features * m.in_features * m.share for m in linears) * rows / ranks / 1e6


def read_shape(model_dir: Path) -> CheckpointShape:
    """The checkpoint's 2-D weights, from its safetensors headers and ``config.json`` (no tensor is read)."""
    # the engines' own dependency, imported where a checkpoint is read; opened for numpy, as only headers are read
    # here and torch's import (seconds) would be paid for nothing
    from safetensors import safe_open

    config = json.loads((model_dir / "config.json").read_text())
    layers = int(config.get("num_hidden_layers", 0))
    experts = config.get("n_routed_experts") or config.get("num_experts") or config.get("num_local_experts") or 0
    top_k = config.get("num_experts_per_tok") or 1
    routed_share = top_k / experts if experts else 1.0
    trunk: list[Linear] = []
    mtp: list[Linear] = []
    small: dict[str, Linear] = {}
    small_int8: list[Linear] = []
    head: list[Linear] = []
    total = 0
    for path in sorted(model_dir.glob("*.safetensors")):
        with safe_open(str(path), "numpy") as handle:
            for name in handle.keys():
                shape = handle.get_slice(name).get_shape()
                total += 2 * _count(shape)
                if len(shape) != 2 or "embed_tokens" in name or not name.endswith(".weight"):
                    continue  # an embedding is a lookup, not a GEMM
                if name.startswith("lm_head."):
                    head.append(Linear(shape[0], shape[1]))
                    continue
                layer = _LAYER.search(name)
                in_mtp = bool(layer and layers and int(layer.group(1)) >= layers)
                if 2 * shape[0] * shape[1] < LARGE_BYTES and handle.get_slice(name).get_dtype() == "I8":
                    if not in_mtp:
                        small_int8.append(Linear(shape[0], shape[1]))
                    continue
                if 2 * shape[0] * shape[1] < LARGE_BYTES:
                    if not in_mtp:  # one entry per layer and projection: the fused kernel's one call
                        key = _EXPERT.sub(".experts.", name)
                        small[key] = Linear(shape[0], shape[1], float(top_k) if key != name else 1.0)
                    continue
                linear = Linear(shape[0], shape[1], routed_share if _EXPERT.search(name) else 1.0)
                (mtp if in_mtp else trunk).append(linear)
    return CheckpointShape(tuple(trunk), tuple(mtp), total, tuple(small.values()), max(layers, 1), tuple(head),
                           tuple(small_int8))


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


def rank_gemm_ms(linears: tuple[Linear, ...], tokens: int, ranks: int, threads: int, cache: dict[str, float]) -> float:
    """Milliseconds one of ``ranks`` tensor-parallel ranks spends on its share of ``linears`` (each matrix split
    along its output) over ``tokens`` rows, on ``threads`` threads."""
    if not linears or tokens <= 0:
        return 0.0
    shard = tuple(Linear(max(1, m.out_features // ranks), m.in_features, m.share) for m in linears)
    return 1e3 * gemm_seconds(shard, tokens, threads, cache)
