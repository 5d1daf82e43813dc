"""The server's own Prometheus counters, scraped around a cell and turned into per-cell deltas.

This module owns reading ``GET /metrics`` (parsed by ``prometheus_client``'s parser, never by hand) and the
arithmetic on two snapshots: speculative-decoding acceptance, the server's own TTFT / TPOT / ITL / E2E / queue
histograms, prefix-cache hits, and a few generic counters. Every number it
reports is a difference between a snapshot taken before a cell and one taken after, never a server-lifetime
total, so cells that share a server do not leak into each other.

Which metric holds what is each engine's own business: its adapter (``harness.servers.vllm``, ``...sglang``) gives
the names (``ServerMetricNames``, ``SpeculationCounterNames``); nothing here spells an engine's metric.

Counter naming: an engine declares ``<prefix>:spec_decode_num_drafts``; the exposition's samples are named
``<prefix>:spec_decode_num_drafts_total`` (plus a ``_created`` gauge). Snapshots are keyed by sample name, and
lookups accept either form. Samples are summed over every label not asked for, which adds up the ``engine``
label of data-parallel engines.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel, ConfigDict

from harness.endpoint_access import http_client
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
        return self.samples_by_label(counter if counter.endswith("_total") else counter + "_total", label)

    def samples_by_label(self, sample_name: str, label: str | None) -> dict[str, float]:
        """Samples of one exact name (``..._bucket``, ``..._count``) summed per value of one label."""
        sums: dict[str, float] = {}
        for (sample, labels), value in self.samples.items():
            if sample == sample_name:
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
    async with http_client(base_url, base_url=base_url, transport=transport, timeout=timeout_s) as client:
        try:
            response = await client.get("/metrics")
        except httpx.HTTPError as exc:
            raise ServerLost(f"GET {base_url}/metrics failed: {type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        log.warning("GET %s/metrics answered %d; no server counters for this cell", base_url,
                    response.status_code)
        return MetricsSnapshot({})
    return parse_exposition(response.text)


async def scrape_all(base_urls: Sequence[str]) -> MetricsSnapshot:
    """One snapshot of several servers (the engines of a deployment): each server's samples kept apart by a
    ``harness_part`` label, so every total and histogram sums over the deployment."""
    if len(base_urls) == 1:
        return await scrape(base_urls[0])
    snapshots = await asyncio.gather(*(scrape(url) for url in base_urls))
    merged: dict[SampleKey, float] = {}
    for index, snapshot in enumerate(snapshots):
        for (name, labels), value in snapshot.samples.items():
            merged[(name, labels | {("harness_part", str(index))})] = value
    return MetricsSnapshot(merged)


@dataclass(frozen=True, slots=True)
class SpeculationCounterNames:
    """Names of an engine's per-draft speculative-decoding counters (given by its adapter)."""

    drafts: str
    draft_tokens: str
    accepted: str
    accepted_per_pos: str
    position_label: str = "position"


class SpeculationStats(BaseModel):
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


def speculation_delta(
    before: MetricsSnapshot, after: MetricsSnapshot, names: SpeculationCounterNames
) -> SpeculationStats | None:
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
    return SpeculationStats(
        drafts=round(drafts),
        draft_tokens=round(draft_tokens),
        accepted_tokens=round(accepted),
        acceptance_rate=accepted / draft_tokens,
        acceptance_length=1 + accepted / drafts,
        per_position=tuple((pos_after[p] - pos_before.get(p, 0.0)) / drafts for p in positions),
    )


def counter_deltas(before: MetricsSnapshot, after: MetricsSnapshot, names: Iterable[str]) -> dict[str, float]:
    """after - before for each counter, summed over labels; a negative delta means the server restarted."""
    return {name: after.total(name) - before.total(name) for name in names}


@dataclass(frozen=True, slots=True)
class ServerMetricNames:
    """Where an engine keeps its own latency histograms, prefix-cache counters and the counters worth a delta per
    cell (given by its adapter)."""

    ttft: str
    tpot: str
    itl: str
    e2el: str
    queue: str
    prefix_queries: str
    """Prompt tokens looked up in the prefix cache (or every prompt token, where the engine counts only hits)."""
    prefix_hits: str
    counters: tuple[str, ...] = ()
    kv_transfer: str | None = None
    """The KV connector's transfer-time histogram (seconds), where the engine exports one (prefill/decode)."""


class HistogramStats(BaseModel):
    """A server-side latency histogram over one interval (bucket deltas), in milliseconds.

    Quantiles interpolate linearly inside the bucket that holds them, as Prometheus' ``histogram_quantile``; they
    are as coarse as the engine's buckets, which is why the client's exact figures stay the primary ones.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int
    mean: float
    p50: float
    p90: float
    p99: float


class PrefixCacheStats(BaseModel):
    """Prefix caching over one interval, in prompt tokens (vLLM counts queried and hit tokens)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    queries: int
    hits: int
    hit_rate: float | None
    """hits / queries; None when nothing was queried."""


class ServerStats(BaseModel):
    """The server's own view of one cell, stored beside the client's: histograms, prefix cache, counters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ttft_ms: HistogramStats | None = None
    tpot_ms: HistogramStats | None = None
    itl_ms: HistogramStats | None = None
    e2el_ms: HistogramStats | None = None
    queue_ms: HistogramStats | None = None
    kv_transfer_ms: HistogramStats | None = None
    """KV transfers between prefill and decode servers in this interval, where the connector exports their time."""
    prefix_cache: PrefixCacheStats | None = None
    counters: dict[str, float] = {}
    """Deltas of ``GENERIC_COUNTERS`` (prompt and generation tokens, preemptions, successes)."""


def _bucket_quantile(q: float, bounds: list[tuple[float, float]]) -> float:
    """Prometheus' histogram_quantile over (upper bound, cumulative count) pairs, +Inf last."""
    total = bounds[-1][1]
    rank, lower, below = q * total, 0.0, 0.0
    for upper, cumulative in bounds:
        if cumulative >= rank:
            if upper == float("inf"):
                return lower  # the top bucket is open: its lower bound is the best one can say
            inside = cumulative - below
            return lower + (upper - lower) * ((rank - below) / inside if inside > 0 else 1.0)
        lower, below = upper, cumulative
    return lower


def histogram_delta(before: MetricsSnapshot, after: MetricsSnapshot, name: str) -> HistogramStats | None:
    """A histogram's distribution over the interval (ms); None when it is absent or saw nothing."""
    count = sum(after.samples_by_label(name + "_count", None).values()) - \
        sum(before.samples_by_label(name + "_count", None).values())
    if count <= 0:
        return None
    total = sum(after.samples_by_label(name + "_sum", None).values()) - \
        sum(before.samples_by_label(name + "_sum", None).values())
    buckets_after = after.samples_by_label(name + "_bucket", "le")
    buckets_before = before.samples_by_label(name + "_bucket", "le")
    bounds = sorted((float(le), value - buckets_before.get(le, 0.0)) for le, value in buckets_after.items())
    if not bounds:
        return None
    return HistogramStats(count=round(count), mean=total / count * 1000.0,
                          p50=_bucket_quantile(0.5, bounds) * 1000.0, p90=_bucket_quantile(0.9, bounds) * 1000.0,
                          p99=_bucket_quantile(0.99, bounds) * 1000.0)


def server_delta(before: MetricsSnapshot, after: MetricsSnapshot, names: ServerMetricNames) -> ServerStats | None:
    """The server's view of the interval between two snapshots; None when the server exposes none of it."""
    queries = after.total(names.prefix_queries) - before.total(names.prefix_queries)
    hits = after.total(names.prefix_hits) - before.total(names.prefix_hits)
    exposed = any(sample.startswith(names.prefix_queries) for sample, _ in after.samples)
    stats = ServerStats(
        ttft_ms=histogram_delta(before, after, names.ttft),
        tpot_ms=histogram_delta(before, after, names.tpot),
        itl_ms=histogram_delta(before, after, names.itl),
        e2el_ms=histogram_delta(before, after, names.e2el),
        queue_ms=histogram_delta(before, after, names.queue),
        kv_transfer_ms=histogram_delta(before, after, names.kv_transfer) if names.kv_transfer else None,
        prefix_cache=PrefixCacheStats(queries=round(queries), hits=round(hits),
                                      hit_rate=hits / queries if queries > 0 else None) if exposed else None,
        counters=counter_deltas(before, after, names.counters) if after.samples else {},
    )
    return None if stats == ServerStats() else stats
