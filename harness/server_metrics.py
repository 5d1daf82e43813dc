"""The server's own Prometheus counters, scraped around a cell and turned into per-cell deltas.

This module owns reading ``GET /metrics`` (parsed by ``prometheus_client``'s parser, never by hand) and the
arithmetic on two snapshots: speculative-decoding acceptance and a few generic counters. Every number it
reports is a difference between a snapshot taken before a cell and one taken after, never a server-lifetime
total, so cells that share a server do not leak into each other.

Counter naming: vLLM declares ``vllm:spec_decode_num_drafts``; the exposition's samples are named
``vllm:spec_decode_num_drafts_total`` (plus a ``_created`` gauge). Snapshots are keyed by sample name, and
lookups accept either form. Samples are summed over every label not asked for, which adds up the ``engine``
label of data-parallel engines.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel, ConfigDict

from harness.errors import ServerLost

log = logging.getLogger(__name__)

SampleKey = tuple[str, frozenset[tuple[str, str]]]
"""(sample name, labels) of one exposed value."""


@dataclass(frozen=True, slots=True)
class MetricsSnapshot:
    """Every sample of one ``/metrics`` scrape."""

    samples: Mapping[SampleKey, float]

    def total(self, counter: str) -> float:
        """Sum of a counter over all its label sets (0 when the server does not expose it)."""
        return sum(self.by_label(counter, None).values())

    def by_label(self, counter: str, label: str | None) -> dict[str, float]:
        """A counter summed per value of one label (e.g. ``position``); ``label=None`` sums everything."""
        name = counter if counter.endswith("_total") else counter + "_total"
        sums: dict[str, float] = {}
        for (sample, labels), value in self.samples.items():
            if sample == name:
                key = "" if label is None else dict(labels).get(label, "")
                sums[key] = sums.get(key, 0.0) + value
        return sums


def parse_exposition(text: str) -> MetricsSnapshot:
    """A snapshot from Prometheus text exposition (what ``/metrics`` returns)."""
    samples: dict[SampleKey, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = float(sample.value)
    return MetricsSnapshot(samples)


async def scrape(
    base_url: str, *, transport: httpx.AsyncBaseTransport | None = None, timeout_s: float = 10.0
) -> MetricsSnapshot:
    """Read ``GET {base_url}/metrics``.

    A server without metrics (non-200) gives an empty snapshot and a warning, so deltas are simply absent.
    A server that does not answer at all raises ``ServerLost``: that is the cell's failure, not a statistic.
    """
    async with httpx.AsyncClient(base_url=base_url, transport=transport, timeout=timeout_s,
                                 trust_env=False) as client:
        try:
            response = await client.get("/metrics")
        except httpx.HTTPError as exc:
            raise ServerLost(f"GET {base_url}/metrics failed: {type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        log.warning("GET %s/metrics answered %d; no server counters for this cell", base_url,
                    response.status_code)
        return MetricsSnapshot({})
    return parse_exposition(response.text)


@dataclass(frozen=True, slots=True)
class SpecCounterNames:
    """Names of the speculative-decoding counters (vLLM's by default; another engine maps its own here)."""

    drafts: str = "vllm:spec_decode_num_drafts"
    draft_tokens: str = "vllm:spec_decode_num_draft_tokens"
    accepted: str = "vllm:spec_decode_num_accepted_tokens"
    accepted_per_pos: str = "vllm:spec_decode_num_accepted_tokens_per_pos"
    position_label: str = "position"


class SpecDecodeStats(BaseModel):
    """Speculative decoding during one cell, from counter deltas."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    drafts: int
    """Draft proposals verified (one per sequence per step that speculated)."""
    draft_tokens: int
    accepted_tokens: int
    acceptance_rate: float
    """accepted / draft_tokens."""
    acceptance_length: float
    """1 + accepted / drafts: tokens emitted per verification step, the bonus token included."""
    per_position: tuple[float, ...]
    """accepted at draft position i / drafts, for i = 0 .. k-1."""


def spec_decode_delta(
    before: MetricsSnapshot, after: MetricsSnapshot, names: SpecCounterNames = SpecCounterNames()
) -> SpecDecodeStats | None:
    """Acceptance over the interval between two snapshots; None when nothing was drafted (speculation off)."""
    drafts = after.total(names.drafts) - before.total(names.drafts)
    draft_tokens = after.total(names.draft_tokens) - before.total(names.draft_tokens)
    accepted = after.total(names.accepted) - before.total(names.accepted)
    if min(drafts, draft_tokens, accepted) < 0:
        log.warning("spec-decode counters went backwards (server restarted?); no acceptance for this cell")
        return None
    if drafts <= 0 or draft_tokens <= 0:
        return None
    pos_before = before.by_label(names.accepted_per_pos, names.position_label)
    pos_after = after.by_label(names.accepted_per_pos, names.position_label)
    positions = sorted((p for p in pos_after if p.isdigit()), key=int)
    return SpecDecodeStats(
        drafts=round(drafts),
        draft_tokens=round(draft_tokens),
        accepted_tokens=round(accepted),
        acceptance_rate=accepted / draft_tokens,
        acceptance_length=1 + accepted / drafts,
        per_position=tuple((pos_after[p] - pos_before.get(p, 0.0)) / drafts for p in positions),
    )


GENERIC_COUNTERS = ("vllm:prompt_tokens", "vllm:generation_tokens", "vllm:num_preemptions", "vllm:request_success")
"""Counters worth a delta per cell on any vLLM server."""


def counter_deltas(
    before: MetricsSnapshot, after: MetricsSnapshot, names: Iterable[str] = GENERIC_COUNTERS
) -> dict[str, float]:
    """after - before for each counter, summed over labels; a negative delta means the server restarted."""
    return {name: after.total(name) - before.total(name) for name in names}
