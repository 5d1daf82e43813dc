from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from harness.errors import ServerLost
from harness.server_metrics import (
    MetricsSnapshot, SpecCounterNames, counter_deltas, parse_exposition, scrape, spec_decode_delta,
)

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
    stats = spec_decode_delta(before, after)
    assert stats is not None
    assert (stats.drafts, stats.draft_tokens, stats.accepted_tokens) == (120, 360, 192)
    assert stats.acceptance_rate == pytest.approx(192 / 360)
    assert stats.acceptance_length == pytest.approx(1 + 192 / 120)
    assert stats.per_position == pytest.approx((84 / 120, 64 / 120, 44 / 120))
    # server-lifetime figures would differ: the delta is what counts
    assert after.total("vllm:spec_decode_num_accepted_tokens") / after.total("vllm:spec_decode_num_draft_tokens") \
        != pytest.approx(stats.acceptance_rate)


def test_no_drafts_means_no_spec_stats(before: MetricsSnapshot, after: MetricsSnapshot) -> None:
    assert spec_decode_delta(before, before) is None
    assert spec_decode_delta(MetricsSnapshot({}), MetricsSnapshot({})) is None
    assert spec_decode_delta(after, before) is None  # counters went backwards: a restart, not a statistic
    renamed = SpecCounterNames(drafts="sglang:nothing")
    assert spec_decode_delta(before, after, renamed) is None


def test_generic_counter_deltas(before: MetricsSnapshot, after: MetricsSnapshot) -> None:
    deltas = counter_deltas(before, after)
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
