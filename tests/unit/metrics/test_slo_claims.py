"""SLO bounds judged on a cell's requests: met, missed or insufficient samples, pooled over launches."""

from __future__ import annotations

from harness.config import Slo
from harness.load import RequestRecord
from harness.metrics import combine, summarize
from harness.metrics.slo_claims import pool_claims, slo_claims


def request(index: int, ttft_s: float) -> RequestRecord:
    """A completed 11-token request: its first token at ``ttft_s``, then one every 10 ms (TPOT 10 ms)."""
    times = tuple(ttft_s + i * 0.01 for i in range(11))
    return RequestRecord(index=index, warmup=False, input_tokens=16, max_tokens=11, send_time=float(index),
                         end_time=index + times[-1] + 0.001, chunk_times=times, chunk_tokens=(1,) * 11,
                         output_tokens=11, prompt_tokens=16)


def fast(n: int, start: int = 0) -> list[RequestRecord]:
    return [request(start + i, 0.1) for i in range(n)]


def test_thirty_two_requests_cannot_claim_a_p99_but_can_claim_a_median() -> None:
    claims = {c.field: c for c in slo_claims(fast(32), Slo(ttft_ms=500, tpot_p50_ms=50))}
    ttft, tpot = claims["ttft_ms"], claims["tpot_p50_ms"]
    assert (ttft.name, ttft.percentile, ttft.samples, ttft.over) == ("TTFT p99", 0.99, 32, 0)
    assert ttft.verdict == "insufficient samples" and ttft.needed == 459
    assert "needs 459 with 0 over" in ttft.reason
    assert tpot.verdict == "met" and tpot.name == "TPOT median"


def test_a_tail_far_over_the_bound_is_missed_on_few_requests() -> None:
    records = fast(27) + [request(100 + i, 0.9) for i in range(5)]  # 5 of 32 over a 500 ms TTFT bound
    (ttft,) = slo_claims(records, Slo(ttft_p99_ms=500))
    assert (ttft.over, ttft.verdict) == (5, "missed")


def test_launches_pool_their_requests_into_one_claim() -> None:
    slo = Slo(ttft_ms=500)
    runs = [summarize(fast(240, start=k * 1000), 10.0, slo) for k in range(2)]
    assert [r.slo_claims[0].verdict for r in runs] == ["insufficient samples"] * 2
    (pooled,) = combine(runs).slo_claims
    assert (pooled.samples, pooled.over, pooled.verdict) == (480, 0, "met")
    assert pool_claims([r.slo_claims for r in runs]) == combine(runs).slo_claims


def test_no_slo_no_claims() -> None:
    assert slo_claims(fast(4), None) == () and summarize(fast(4), 1.0).slo_claims == ()
