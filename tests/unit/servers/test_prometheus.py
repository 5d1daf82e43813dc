from __future__ import annotations

import dataclasses
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from harness.errors import ServerLost
from harness.servers.prometheus import (
    MetricsSnapshot,
    counter_deltas,
    histogram_delta,
    parse_exposition,
    scrape,
    server_delta,
    speculation_delta,
)
from harness.servers.vllm import VLLM_METRICS, VLLM_SPECULATION

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def before() -> MetricsSnapshot:
    return parse_exposition((DATA / "vllm_metrics_before.txt").read_text())


@pytest.fixture(scope="module")
def after() -> MetricsSnapshot:
    return parse_exposition((DATA / "vllm_metrics_after.txt").read_text())


def test_counters_sum_over_dp_engines(after: MetricsSnapshot) -> None:
    assert after.total("vllm:spec_decode_num_drafts") == 160 + 140
    assert after.total("vllm:spec_decode_num_drafts_total") == 300  # the sample name works too
    assert after.total("vllm:no_such_counter") == 0
    assert after.by_label("vllm:spec_decode_num_accepted_tokens_per_pos", "position") == {
        "0": 112 + 98, "1": 82 + 72, "2": 52 + 46}
    # the _created gauges are kept apart from the counter's value
    assert after.total("vllm:spec_decode_num_drafts_created") == 0


def test_spec_decode_delta_is_per_interval(before: MetricsSnapshot, after: MetricsSnapshot) -> None:
    stats = speculation_delta(before, after, VLLM_SPECULATION)
    assert stats is not None
    assert (stats.drafts, stats.draft_tokens, stats.accepted_tokens) == (120, 360, 192)
    assert stats.acceptance_rate == pytest.approx(192 / 360)
    assert stats.acceptance_length == pytest.approx(1 + 192 / 120)
    assert stats.per_position == pytest.approx((84 / 120, 64 / 120, 44 / 120))
    # server-lifetime figures would differ: the delta is what counts
    assert after.total("vllm:spec_decode_num_accepted_tokens") / after.total("vllm:spec_decode_num_draft_tokens") \
        != pytest.approx(stats.acceptance_rate)


def test_no_drafts_means_no_spec_stats(before: MetricsSnapshot, after: MetricsSnapshot) -> None:
    assert speculation_delta(before, before, VLLM_SPECULATION) is None
    assert speculation_delta(MetricsSnapshot({}), MetricsSnapshot({}), VLLM_SPECULATION) is None
    # counters went backwards: a restart, not a statistic
    assert speculation_delta(after, before, VLLM_SPECULATION) is None
    renamed = dataclasses.replace(VLLM_SPECULATION, drafts="sglang:nothing")
    assert speculation_delta(before, after, renamed) is None


def test_generic_counter_deltas(before: MetricsSnapshot, after: MetricsSnapshot) -> None:
    deltas = counter_deltas(before, after, VLLM_METRICS.counters)
    assert deltas == {"vllm:prompt_tokens": 4100.0, "vllm:generation_tokens": 2250.0,
                      "vllm:num_preemptions": 0.0, "vllm:request_success": 41.0}
    assert counter_deltas(before, after, ["vllm:generation_tokens"]) == {"vllm:generation_tokens": 2250.0}


async def test_scrape_reads_metrics_endpoint() -> None:
    text = (DATA / "vllm_metrics_after.txt").read_text()
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, text=text)

    snapshot = await scrape("http://server:8000", transport=httpx.MockTransport(handler))
    assert seen == ["/metrics"]
    assert snapshot.total("vllm:generation_tokens") == 3100 + 2950


async def test_scrape_without_metrics_is_empty_and_a_dead_server_raises() -> None:
    missing = await scrape("http://server", transport=httpx.MockTransport(lambda r: httpx.Response(404)))
    assert missing.samples == {}

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(ServerLost, match="metrics"):
        await scrape("http://server", transport=httpx.MockTransport(refuse))


def _histogram_exposition(ttfts: list[float], prefix: tuple[int, int]) -> MetricsSnapshot:
    """What vLLM 0.32 exposes for TTFT and the prefix cache, rendered by prometheus_client, two engines."""
    registry = CollectorRegistry()
    labels = ["model_name", "engine"]
    ttft = Histogram("vllm:time_to_first_token_seconds", "TTFT.", labelnames=labels, registry=registry,
                     buckets=(0.01, 0.02, 0.04, 0.08, 0.16))
    queries = Counter("vllm:prefix_cache_queries", "Queried tokens.", labelnames=labels, registry=registry)
    hits = Counter("vllm:prefix_cache_hits", "Hit tokens.", labelnames=labels, registry=registry)
    for i, value in enumerate(ttfts):
        ttft.labels("m", str(i % 2)).observe(value)
    queries.labels("m", "0").inc(prefix[0])
    hits.labels("m", "0").inc(prefix[1])
    return parse_exposition(generate_latest(registry).decode())


def test_histogram_delta_gives_the_interval_distribution() -> None:
    before = _histogram_exposition([0.5] * 10, (100, 0))  # slow requests before the cell
    after = _histogram_exposition([0.5] * 10 + [0.015] * 50 + [0.03] * 40 + [0.06] * 10, (1100, 600))
    stats = histogram_delta(before, after, "vllm:time_to_first_token_seconds")
    assert stats is not None and stats.count == 100
    assert stats.mean == pytest.approx((50 * 15 + 40 * 30 + 10 * 60) / 100)
    assert stats.p50 == pytest.approx(20.0)  # rank 50 ends the (10, 20] ms bucket
    assert stats.p90 == pytest.approx(40.0)
    assert stats.p99 == pytest.approx(40 + 40 * (99 - 90) / 10)  # interpolated inside (40, 80]
    assert histogram_delta(before, before, "vllm:time_to_first_token_seconds") is None


def test_server_delta_stores_prefix_cache_and_histograms() -> None:
    before = _histogram_exposition([0.015], (100, 0))
    after = _histogram_exposition([0.015, 0.015, 0.5], (1100, 600))
    stats = server_delta(before, after, VLLM_METRICS)
    assert stats is not None and stats.prefix_cache is not None
    assert (stats.prefix_cache.queries, stats.prefix_cache.hits) == (1000, 600)
    assert stats.prefix_cache.hit_rate == pytest.approx(0.6)
    assert stats.ttft_ms is not None and stats.ttft_ms.count == 2
    assert stats.ttft_ms.p99 == pytest.approx(160.0)  # beyond the last finite bucket: its bound
    assert stats.tpot_ms is None and stats.counters["vllm:generation_tokens"] == 0
    assert server_delta(MetricsSnapshot({}), MetricsSnapshot({}), VLLM_METRICS) is None


def test_server_delta_from_the_recorded_vllm_exposition(before: MetricsSnapshot, after: MetricsSnapshot) -> None:
    stats = server_delta(before, after, VLLM_METRICS)
    assert stats is not None and stats.counters["vllm:request_success"] == 41.0
    assert stats.prefix_cache is None  # not exposed there: absent, not zero


def _parts(transfers: list[list[float]]) -> list[MetricsSnapshot]:
    """Each server of a deployment as vLLM's NIXL connector exposes its transfer time (one exposition each)."""
    snapshots = []
    for values in transfers:
        registry = CollectorRegistry()
        xfer = Histogram("vllm:nixl_xfer_time_seconds", "KV transfer time.", labelnames=["engine"],
                         registry=registry, buckets=(0.001, 0.005, 0.01, 0.05))
        for value in values:
            xfer.labels("0").observe(value)
        snapshots.append(parse_exposition(generate_latest(registry).decode()))
    return snapshots


async def test_a_deployments_parts_are_summed_and_its_kv_transfer_time_read(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.servers.prometheus as prometheus

    before = {"http://p": _parts([[]])[0], "http://d": _parts([[0.002]])[0]}
    after = {"http://p": _parts([[]])[0], "http://d": _parts([[0.002, 0.004, 0.004, 0.008]])[0]}
    current = before

    async def fake_scrape(url: str) -> MetricsSnapshot:
        return current[url]

    monkeypatch.setattr(prometheus, "scrape", fake_scrape)
    first = await prometheus.scrape_all(["http://p", "http://d"])
    current = after
    second = await prometheus.scrape_all(["http://p", "http://d"])
    stats = server_delta(first, second, VLLM_METRICS)
    assert stats is not None and stats.kv_transfer_ms is not None
    assert stats.kv_transfer_ms.count == 3 and stats.kv_transfer_ms.mean == pytest.approx(16 / 3, rel=1e-6)
