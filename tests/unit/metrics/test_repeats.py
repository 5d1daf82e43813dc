from __future__ import annotations

import pytest

from harness.load.cpu_watch import ClientLoad
from harness.load.records import ErrorInfo, RequestRecord
from harness.metrics.repeats import combine
from harness.metrics.summary import CellSummary, summarize
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
