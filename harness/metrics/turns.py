"""Agent sessions turn by turn: how TTFT, TPOT and the prefix cache move as a session's context grows.

Records in (an ``agent`` cell's, every launch pooled), one ``TurnStats`` per turn index out. The context length is
what the server prefilled (``usage.prompt_tokens``: the chat template, the tools and the previous answers
included); the cached share is ``usage.prompt_tokens_details.cached_tokens`` over it, where the server reports it
(vLLM with ``--enable-prompt-tokens-details``, SGLang with ``--enable-cache-report``; the adapters ask for both).
Failed and warm-up requests are left out, as everywhere.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from harness.load.records import RequestRecord


@dataclass(frozen=True, slots=True)
class TurnStats:
    turn: int
    """0 is a session's first turn."""
    requests: int
    context_tokens: float
    """Mean prompt tokens the server prefilled at this turn."""
    ttft_p50_ms: float
    ttft_p90_ms: float
    tpot_p50_ms: float | None
    cached_share: float | None
    """Cached prompt tokens / prompt tokens, summed over the turn's requests; None when the server did not say."""


def turn_stats(records: Iterable[RequestRecord]) -> list[TurnStats]:
    """Per-turn figures of the completed, measured turns, in turn order."""
    by_turn: dict[int, list[RequestRecord]] = defaultdict(list)
    for record in records:
        if record.turn is not None and record.ok and not record.warmup and record.ttft is not None:
            by_turn[record.turn].append(record)
    stats = []
    for turn in sorted(by_turn):
        done = by_turn[turn]
        ttfts = np.asarray([r.ttft for r in done], dtype=float) * 1000.0
        tpots = [t * 1000.0 for r in done if (t := r.tpot) is not None]
        prompts = [r.prompt_tokens if r.prompt_tokens is not None else r.input_tokens for r in done]
        reported = [(r.cached_tokens, p) for r, p in zip(done, prompts, strict=True) if r.cached_tokens is not None]
        cached = sum(c for c, _ in reported) / sum(p for _, p in reported) if reported and \
            sum(p for _, p in reported) > 0 else None
        stats.append(TurnStats(
            turn=turn, requests=len(done), context_tokens=float(np.mean(prompts)),
            ttft_p50_ms=float(np.percentile(ttfts, 50)), ttft_p90_ms=float(np.percentile(ttfts, 90)),
            tpot_p50_ms=float(np.median(tpots)) if tpots else None, cached_share=cached,
        ))
    return stats
