from __future__ import annotations

import pytest

from harness.load.cpu_watch import ClientLoad
from harness.load.records import ErrorInfo, RequestRecord
from harness.metrics import CellSummary, combine, summarize
from harness.servers.prometheus import SpeculationStats


def _run(ttft: float, tokens: int, duration: float, failed: int = 0, cpu: float = 0.1) -> CellSummary:
    records = [RequestRecord(index=i, warmup=False, input_tokens=10, max_tokens=tokens, send_time=0.0,
                             end_time=1.0, chunk_times=(ttft, ttft + 0.5), chunk_tokens=(1, tokens - 1),
                             output_tokens=tokens, prompt_tokens=10) for i in range(4)]
    records += [RequestRecord(index=4 + i, warmup=False, input_tokens=10, max_tokens=tokens, send_time=0.0,
                              end_time=0.1, error=ErrorInfo("timeout", "slow")) for i in range(failed)]
    client = ClientLoad(cpu_s=1.0, cpu_util=cpu, loop_lag_p99_ms=0.1, loop_lag_max_ms=0.2, bottleneck=cpu >= 0.8)
    return summarize(records, duration, client=client)


def test_one_repeat_is_returned_unchanged() -> None:
    run = _run(0.1, 11, 2.0)
    assert combine([run]) is run
    with pytest.raises(ValueError):
        combine([])


def test_counts_add_up_and_figures_take_the_median() -> None:
    runs = [_run(0.100, 11, 2.0), _run(0.300, 11, 4.0, failed=2, cpu=0.9), _run(0.200, 11, 1.0)]
    spec = SpeculationStats(drafts=30, draft_tokens=60, accepted_tokens=30, acceptance_rate=0.5,
                           acceptance_length=2.0, per_position=(0.6, 0.4))
    summary = combine(runs, speculation=spec)
    assert (summary.requests, summary.completed, summary.failed) == (14, 12, 2)
    assert summary.error_kinds == {"timeout": 2} and summary.duration_s == pytest.approx(7.0)
    assert summary.total_output_tokens == 3 * 44
    assert summary.ttft_ms is not None and summary.ttft_ms.median == pytest.approx(200.0)
    assert summary.ttft_ms.count == 12
    assert summary.output_throughput == pytest.approx(44 / 2.0)  # median of 22, 11, 44
    assert summary.speculation == spec  # pooled counters, passed in
    assert summary.client is not None and summary.client.bottleneck  # the busiest repeat speaks for the cell
    assert summary.repeats == tuple(runs)


def test_every_directional_figure_gets_its_spread() -> None:
    runs = [_run(0.100, 11, 2.0), _run(0.300, 11, 4.0), _run(0.200, 11, 1.0)]
    spread = combine(runs).spread
    assert spread["ttft_ms.median"].values == pytest.approx((100.0, 300.0, 200.0))
    assert spread["ttft_ms.median"].median == pytest.approx(200.0)
    assert spread["ttft_ms.p99"].mad == pytest.approx(100.0)
    assert spread["output_throughput"].values == pytest.approx((22.0, 11.0, 44.0))
    assert "requests" not in spread and "goodput" not in spread  # neutral, or absent in every repeat
    assert CellSummary.model_validate_json(combine(runs).model_dump_json()) == combine(runs)


def test_launches_pool_counters_and_keep_each_launch() -> None:
    from harness.metrics.repeats import combine_launches, pool_server
    from harness.servers.prometheus import HistogramStats, PrefixCacheStats, ServerStats

    def server(mean: float, hits: int) -> ServerStats:
        return ServerStats(itl_ms=HistogramStats(count=10, mean=mean, p50=mean, p90=mean * 2, p99=mean * 3),
                           prefix_cache=PrefixCacheStats(queries=100, hits=hits, hit_rate=hits / 100),
                           counters={"generation_tokens": 50.0})

    def spec(drafts: int, accepted: int) -> SpeculationStats:
        return SpeculationStats(drafts=drafts, draft_tokens=drafts * 2, accepted_tokens=accepted,
                                acceptance_rate=accepted / (drafts * 2), acceptance_length=1 + accepted / drafts,
                                per_position=(accepted / drafts,))

    launches = [_run(0.1, 11, 2.0).model_copy(update={"speculation": spec(10, 10), "server": server(2.0, 10)}),
                _run(0.2, 11, 4.0).model_copy(update={"speculation": spec(30, 6), "server": server(4.0, 30)}),
                _run(0.3, 11, 3.0).model_copy(update={"speculation": None, "server": None})]
    pooled = combine_launches(launches)
    assert pooled.launches == 3 and pooled.repeats == tuple(launches)
    assert pooled.speculation is not None and pooled.speculation.drafts == 40
    assert pooled.speculation.acceptance_rate == pytest.approx(16 / 80)
    assert pooled.speculation.per_position == pytest.approx((16 / 40,))
    assert pooled.server is not None and pooled.server.itl_ms is not None
    assert pooled.server.itl_ms.count == 20 and pooled.server.itl_ms.mean == pytest.approx(3.0)
    assert pooled.server.prefix_cache is not None and pooled.server.prefix_cache.hit_rate == pytest.approx(0.2)
    assert pooled.server.counters == {"generation_tokens": 100.0}
    assert pooled.spread["output_throughput"].values == tuple(r.output_throughput for r in launches)
    assert combine_launches(launches[:1]) is launches[0] and pool_server([None]) is None
