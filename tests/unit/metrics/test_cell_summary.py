from __future__ import annotations

import json
import math

import numpy as np
import pytest

from harness.config import Slo
from harness.load.cpu_watch import ClientLoad
from harness.load.records import ErrorInfo, RequestRecord
from harness.metrics.cell_summary import METRICS, METRICS_BY_NAME, CellSummary, latency_stats, summarize
from harness.servers.prometheus import ServerStats, SpeculationStats


def ok(index: int, ttft: float, gap: float, tokens: int, *, prompt: int | None = 100,
       warmup: bool = False, per_chunk: int = 1) -> RequestRecord:
    """A completed request: first token at ttft, then chunks of per_chunk tokens every gap seconds."""
    chunks = [1] + [per_chunk] * ((tokens - 1) // per_chunk)
    times = tuple(ttft + i * gap for i in range(len(chunks)))
    return RequestRecord(index=index, warmup=warmup, input_tokens=90, max_tokens=tokens, send_time=float(index),
                         end_time=index + times[-1] + 0.001, chunk_times=times, chunk_tokens=tuple(chunks),
                         output_tokens=tokens, prompt_tokens=prompt)


def failed(index: int, kind: str) -> RequestRecord:
    return RequestRecord(index=index, warmup=False, input_tokens=90, max_tokens=10, send_time=0.0, end_time=0.1,
                         error=ErrorInfo(kind, "boom"))  # type: ignore[arg-type]


RECORDS = [
    ok(0, ttft=0.100, gap=0.010, tokens=11),               # TPOT 10 ms
    ok(1, ttft=0.200, gap=0.040, tokens=9, per_chunk=2),   # 5 chunks of 1,2,2,2,2: TPOT (4*40)/8 = 20 ms
    ok(2, ttft=0.300, gap=0.030, tokens=4, prompt=None),   # TPOT 30 ms; prompt unreported -> planned 90
    ok(3, ttft=0.050, gap=0.010, tokens=5, warmup=True),   # excluded
    failed(4, "http_status"),
    failed(5, "connection"),
    failed(6, "connection"),
]


def test_counts_and_error_kinds() -> None:
    summary = summarize(RECORDS, duration_s=2.0)
    assert (summary.requests, summary.completed, summary.failed, summary.warmup_excluded) == (6, 3, 3, 1)
    assert summary.error_rate == pytest.approx(0.5)
    assert summary.error_kinds == {"http_status": 1, "connection": 2}


def test_latencies_exclude_failed_and_warmup() -> None:
    summary = summarize(RECORDS, duration_s=2.0)
    assert summary.ttft_ms is not None and summary.ttft_ms.count == 3
    assert summary.ttft_ms.mean == pytest.approx(200.0)
    assert summary.ttft_ms.median == pytest.approx(200.0)
    assert summary.tpot_ms is not None and summary.tpot_ms.median == pytest.approx(20.0)
    assert summary.tpot_ms.mean == pytest.approx(20.0)
    # ITL pools chunk gaps: 10 gaps of 10 ms, 4 of 40 ms, 3 of 30 ms
    assert summary.itl_ms is not None and summary.itl_ms.count == 17
    assert summary.itl_ms.mean == pytest.approx((10 * 10 + 4 * 40 + 3 * 30) / 17)
    assert summary.e2el_ms is not None and summary.e2el_ms.p99 <= 400.0 + 1e-9
    assert summary.interactivity == pytest.approx(1000.0 / 20.0)


def test_throughputs_use_completed_tokens_over_duration() -> None:
    summary = summarize(RECORDS, duration_s=2.0)
    assert summary.total_output_tokens == 11 + 9 + 4
    assert summary.total_input_tokens == 100 + 100 + 90
    assert summary.output_throughput == pytest.approx(24 / 2.0)
    assert summary.total_token_throughput == pytest.approx((24 + 290) / 2.0)
    assert summary.request_throughput == pytest.approx(3 / 2.0)


def test_goodput_counts_requests_meeting_every_bound() -> None:
    assert summarize(RECORDS, 2.0).goodput is None
    assert summarize(RECORDS, 2.0, Slo(ttft_p99_ms=100)).goodput is None  # aggregate bounds are not per-request
    assert summarize(RECORDS, 2.0, Slo(ttft_ms=250)).goodput == pytest.approx(2 / 2.0)
    assert summarize(RECORDS, 2.0, Slo(ttft_ms=250, tpot_ms=15)).goodput == pytest.approx(1 / 2.0)
    assert summarize(RECORDS, 2.0, Slo(tpot_ms=100)).goodput == pytest.approx(3 / 2.0)


def test_percentiles_match_numpy_linear() -> None:
    values = [i / 1000 for i in range(1, 1001)]  # 1..1000 ms
    stats = latency_stats(values)
    assert stats is not None
    ms = np.arange(1, 1001, dtype=float)
    assert stats.median == pytest.approx(500.5)
    assert stats.p90 == pytest.approx(float(np.percentile(ms, 90)))
    assert stats.p99_9 == pytest.approx(float(np.percentile(ms, 99.9)))
    assert stats.std == pytest.approx(float(ms.std()))
    assert latency_stats([]) is None


def test_nothing_completed_gives_empty_statistics() -> None:
    summary = summarize([failed(0, "connection")], duration_s=0.0)
    assert summary.completed == 0 and summary.ttft_ms is None and summary.tpot_ms is None
    assert summary.output_throughput == 0.0 and summary.interactivity is None


def test_summary_serialises_with_spec_stats() -> None:
    spec = SpeculationStats(drafts=10, draft_tokens=30, accepted_tokens=15, acceptance_rate=0.5,
                           acceptance_length=2.5, per_position=(0.8, 0.5, 0.2))
    summary = summarize(RECORDS, 2.0, speculation=spec)
    data = json.loads(summary.model_dump_json())
    assert data["speculation"]["acceptance_length"] == 2.5 and data["ttft_ms"]["p99_9"] > 0
    assert CellSummary.model_validate(data) == summary


def test_every_summary_field_is_declared_once() -> None:
    names = [metric.name for metric in METRICS]
    assert len(names) == len(set(names)) == len(METRICS_BY_NAME)
    computed = {m.name for m in METRICS if m.compute is not None}
    assert computed == set(CellSummary.model_fields) - {"speculation", "server", "client", "repeats", "spread",
                                                        "launches", "slo_claims"}
    supplied = {m.name for m in METRICS if m.compute is None}
    owners = {"speculation": SpeculationStats, "server": ServerStats, "client": ClientLoad}
    for name in supplied:
        owner, _, field = name.partition(".")
        assert field.split(".")[0] in owners[owner].model_fields, name
    for metric in METRICS:
        assert metric.unit and metric.formula and metric.direction in ("higher", "lower", "neutral")
    assert METRICS_BY_NAME["ttft_ms"].direction == "lower"
    assert METRICS_BY_NAME["output_throughput"].direction == "higher"
    assert not math.isnan(summarize(RECORDS, 2.0).tpot_ms.p99)  # type: ignore[union-attr]


def test_per_gpu_throughput_needs_gpus() -> None:
    on_cpu = summarize(RECORDS, 2.0)
    assert on_cpu.output_throughput_per_gpu is None and on_cpu.total_token_throughput_per_gpu is None
    on_8 = summarize(RECORDS, 2.0, gpus=8)
    assert on_8.output_throughput_per_gpu == pytest.approx(24 / 2.0 / 8)
    assert on_8.total_token_throughput_per_gpu == pytest.approx((24 + 290) / 2.0 / 8)


def test_server_and_client_views_are_stored_beside_the_clients_figures() -> None:
    server = ServerStats(counters={"vllm:generation_tokens": 24.0})
    client = ClientLoad(cpu_s=1.0, cpu_util=0.9, loop_lag_p99_ms=1.0, loop_lag_max_ms=2.0, bottleneck=True,
                        reason="busy")
    summary = summarize(RECORDS, 2.0, server=server, client=client)
    assert summary.server == server and summary.client == client
    assert summary.output_throughput == summarize(RECORDS, 2.0).output_throughput  # never mixed in
    assert CellSummary.model_validate_json(summary.model_dump_json()) == summary


def test_a_summary_written_before_these_fields_still_reads() -> None:
    old = summarize(RECORDS, 2.0).model_dump(mode="json")
    for newer in ("output_throughput_per_gpu", "total_token_throughput_per_gpu", "server", "client", "repeats",
                  "spread"):
        old.pop(newer)
    assert CellSummary.model_validate(old).completed == 3
