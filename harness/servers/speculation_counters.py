"""Speculative-decoding acceptance per cell, from each engine's own counters (deltas, never lifetime averages).

vLLM counts drafts, drafted tokens, accepted tokens and accepted tokens per draft position
(``vllm:spec_decode_*``), so every figure is exact. SGLang 0.5's ``sglang:spec_accept_*`` metrics are gauges
of its last logging window, unusable as deltas; its counters are ``sglang:spec_verify_calls_total`` and
``sglang:generation_tokens_total``, both incremented when a request finishes. From their deltas come SGLang's own
definitions (``metrics_reporter.py``): acceptance length = generated tokens / verify calls, drafted tokens =
verify calls x (``--speculative-num-draft-tokens`` - 1). SGLang exposes no per-position counter, so
``per_position`` stays empty for it, and the report shows a dash rather than a guess.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from harness.config.speculation import Speculation
from harness.servers.prometheus import MetricsSnapshot, SpeculationCounterNames, SpeculationStats, speculation_delta

log = logging.getLogger(__name__)


class SpeculationCounters(Protocol):
    """How one engine's counters become a cell's acceptance."""

    def delta(self, before: MetricsSnapshot, after: MetricsSnapshot,
              speculation: Speculation) -> SpeculationStats | None:
        """Acceptance between two snapshots; None when nothing was drafted."""
        ...


@dataclass(frozen=True, slots=True)
class VllmSpeculationCounters:
    """vLLM's way: counters per draft, per drafted token, per accepted token and per accepted position."""

    names: SpeculationCounterNames

    def delta(self, before: MetricsSnapshot, after: MetricsSnapshot,
              speculation: Speculation) -> SpeculationStats | None:
        return speculation_delta(before, after, self.names)


@dataclass(frozen=True, slots=True)
class SglangSpeculationCounters:
    """SGLang's way: generated tokens and verify calls only (the names come from its adapter)."""

    generated: str
    verify_calls: str

    def delta(self, before: MetricsSnapshot, after: MetricsSnapshot,
              speculation: Speculation) -> SpeculationStats | None:
        verify_tokens = getattr(speculation.root, "verify_tokens", None)
        if verify_tokens is None:  # ngram carries k only: a chain of k, as the adapter launches it
            verify_tokens = getattr(speculation.root, "k", 0) + 1
        generated = after.total(self.generated) - before.total(self.generated)
        verifies = after.total(self.verify_calls) - before.total(self.verify_calls)
        if generated < 0 or verifies < 0:
            log.warning("SGLang counters went backwards (server restarted?); no acceptance for this cell")
            return None
        if verifies <= 0 or verify_tokens <= 1:
            return None
        drafted = verifies * (verify_tokens - 1)
        accepted = max(generated - verifies, 0.0)  # each verify call emits its accepted drafts plus one token
        return SpeculationStats(drafts=round(verifies), draft_tokens=round(drafted), accepted_tokens=round(accepted),
                               acceptance_rate=accepted / drafted, acceptance_length=generated / verifies,
                               per_position=())
