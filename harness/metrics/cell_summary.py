"""Declared metrics and the summary of one cell: records in, ``CellSummary`` out.

Each metric is declared once in ``METRICS``, with its unit, the direction that is better, its formula and the
pure function that computes it; the gate and the report read names, units and directions from this table, and
``summarize`` builds the summary from it. Failed requests are counted, and excluded from every latency and
throughput figure; warm-up requests are excluded from everything but their own count.

Definitions follow vLLM bench serve: TPOT excludes the first token; ITL pools the gaps between token-carrying
chunks (one gap per chunk; see ``RequestRecord.itl``); percentiles interpolate linearly (numpy's default).
Speculative-decoding figures and the server's own histograms and prefix-cache counters come from ``/metrics``
(``harness.servers.prometheus``), and the client's own load from ``harness.load.cpu_watch``, so the caller passes them
in; they are stored beside the client's figures, never mixed into them. Per-GPU throughput divides by the GPUs one
replica spans (``hardware.gpus_per_replica``) and is absent on a CPU. A cell run several times (``repeats``) keeps
each repeat's summary; ``harness.metrics.repeats`` combines them (``across_repeats`` below says how each metric
combines).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from harness.config.matrix import Slo
from harness.load.cpu_watch import ClientLoad
from harness.load.records import RequestRecord
from harness.metrics.per_request import RequestAcceptance, request_acceptance
from harness.metrics.slo_claims import SloClaim, slo_claims
from harness.metrics.spread import Spread
from harness.servers.prometheus import ServerStats, SpeculationStats

Direction = Literal["higher", "lower", "neutral"]


class LatencyStats(BaseModel):
    """Distribution of one per-request latency over a cell, in milliseconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int
    mean: float
    std: float
    median: float
    p90: float
    p99: float
    p99_9: float


@dataclass(frozen=True, slots=True)
class CellSample:
    """The measured records of a cell, split once, that every metric function reads."""

    completed: tuple[RequestRecord, ...]
    failed: tuple[RequestRecord, ...]
    warmup: tuple[RequestRecord, ...]
    duration_s: float
    slo: Slo | None
    gpus: int | None = None
    """GPUs one server replica spans; None on a CPU (no per-GPU figures)."""

    def per_gpu(self, amount: float) -> float | None:
        return amount / self.gpus if self.gpus else None

    def per_second(self, amount: float) -> float:
        return amount / self.duration_s if self.duration_s > 0 else 0.0


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    """Field of ``CellSummary`` (``spec.*`` names a field of its ``spec``)."""
    unit: str
    direction: Direction
    """Which way is better; ``neutral`` for counts a gate must not judge."""
    formula: str
    compute: Callable[[CellSample], Any] | None
    """None for figures the caller supplies (server counters, client load)."""
    across_repeats: Literal["median", "sum", "pooled"] = "median"
    """How repeats combine: the median (with its spread), the sum (counts), or recomputed from pooled counters."""
    judged: Literal["timing", "sampled", "exact"] = "timing"
    """How a gate judges it: ``timing`` moves with the machine's speed (interval of the launches, relative to the
    machine-speed probe); ``sampled`` does not (greedy acceptance on fixed prompts: interval of the launches, no
    speed correction); ``exact`` counts must not grow at all (errors)."""


def latency_stats(values_s: Sequence[float]) -> LatencyStats | None:
    """mean / std / median / p90 / p99 / p99.9 in ms of values in seconds; None for no values."""
    if not values_s:
        return None
    ms = np.asarray(values_s, dtype=float) * 1000.0
    p50, p90, p99, p999 = np.percentile(ms, [50, 90, 99, 99.9])
    return LatencyStats(count=int(ms.size), mean=float(ms.mean()), std=float(ms.std()), median=float(p50),
                        p90=float(p90), p99=float(p99), p99_9=float(p999))


def _prompt_tokens(record: RequestRecord) -> int:
    return record.prompt_tokens if record.prompt_tokens is not None else record.input_tokens


def _output_tokens(sample: CellSample) -> int:
    return sum(r.output_tokens for r in sample.completed)


def _tpots(sample: CellSample) -> list[float]:
    return [t for r in sample.completed if (t := r.tpot) is not None]


def _interactivity(sample: CellSample) -> float | None:
    tpots = _tpots(sample)
    median_ms = float(np.median(tpots)) * 1000.0 if tpots else 0.0
    return 1000.0 / median_ms if median_ms > 0 else None


def _meets_slo(record: RequestRecord, slo: Slo) -> bool:
    # As vLLM's --goodput: a request too short to have a TPOT (one token) counts as TPOT 0.
    ttft_ms = (record.ttft or 0.0) * 1000.0
    tpot_ms = (record.tpot or 0.0) * 1000.0
    return (slo.ttft_ms is None or ttft_ms <= slo.ttft_ms) and (slo.tpot_ms is None or tpot_ms <= slo.tpot_ms)


def _goodput(sample: CellSample) -> float | None:
    slo = sample.slo
    if slo is None or (slo.ttft_ms is None and slo.tpot_ms is None):
        return None
    return sample.per_second(sum(1 for r in sample.completed if _meets_slo(r, slo)))


def _measured(sample: CellSample) -> int:
    return len(sample.completed) + len(sample.failed)


METRICS: tuple[Metric, ...] = (
    Metric("requests", "requests", "neutral", "measured requests planned (warm-up excluded)", _measured, "sum"),
    Metric("completed", "requests", "neutral", "measured requests that streamed to [DONE] without error",
           lambda s: len(s.completed), "sum"),
    Metric("failed", "requests", "lower", "measured requests with an error (not_sent included)",
           lambda s: len(s.failed), "sum", "exact"),
    Metric("warmup_excluded", "requests", "neutral", "warm-up requests, excluded from every statistic",
           lambda s: len(s.warmup), "sum"),
    Metric("error_rate", "ratio", "lower", "failed / requests",
           lambda s: len(s.failed) / _measured(s) if _measured(s) else 0.0, judged="exact"),
    Metric("error_kinds", "requests", "neutral", "failed requests counted by ErrorInfo.kind",
           lambda s: dict(Counter(r.error.kind for r in s.failed if r.error is not None)), "sum"),
    Metric("duration_s", "s", "neutral", "first measured send to last measured finish", lambda s: s.duration_s,
           "sum"),
    Metric("total_input_tokens", "tokens", "neutral",
           "sum over completed requests of usage.prompt_tokens (planned length if unreported)",
           lambda s: sum(_prompt_tokens(r) for r in s.completed), "sum"),
    Metric("total_output_tokens", "tokens", "neutral", "sum over completed requests of usage.completion_tokens",
           _output_tokens, "sum"),
    Metric("ttft_ms", "ms", "lower", "TTFT = first token-carrying chunk - send",
           lambda s: latency_stats([t for r in s.completed if (t := r.ttft) is not None])),
    Metric("tpot_ms", "ms", "lower", "TPOT = (E2EL - TTFT) / (output_tokens - 1), requests with >= 2 tokens",
           lambda s: latency_stats(_tpots(s))),
    Metric("itl_ms", "ms", "lower", "ITL = gaps between consecutive token-carrying chunks, pooled over requests",
           lambda s: latency_stats([gap for r in s.completed for gap in r.itl])),
    Metric("e2el_ms", "ms", "lower", "E2EL = last token-carrying chunk - send",
           lambda s: latency_stats([t for r in s.completed if (t := r.e2el) is not None])),
    Metric("request_throughput", "req/s", "higher", "completed / duration_s",
           lambda s: s.per_second(len(s.completed))),
    Metric("output_throughput", "tok/s", "higher", "total_output_tokens / duration_s",
           lambda s: s.per_second(_output_tokens(s))),
    Metric("total_token_throughput", "tok/s", "higher", "(total_input_tokens + total_output_tokens) / duration_s",
           lambda s: s.per_second(_output_tokens(s) + sum(_prompt_tokens(r) for r in s.completed))),
    Metric("goodput", "req/s", "higher",
           "completed requests meeting every per-request SLO bound set (Slo.ttft_ms, Slo.tpot_ms) / duration_s; "
           "None without such a bound", _goodput),
    Metric("output_throughput_per_gpu", "tok/s/GPU", "higher", "output_throughput / GPUs per replica "
           "(none on a CPU)", lambda s: s.per_gpu(s.per_second(_output_tokens(s)))),
    Metric("total_token_throughput_per_gpu", "tok/s/GPU", "higher", "total_token_throughput / GPUs per replica "
           "(none on a CPU)",
           lambda s: s.per_gpu(s.per_second(_output_tokens(s) + sum(_prompt_tokens(r) for r in s.completed)))),
    Metric("interactivity", "tok/s/user", "higher", "1000 / median TPOT (ms)", _interactivity),
    Metric("speculation.acceptance_rate", "ratio", "higher", "delta accepted tokens / delta draft tokens", None,
           "pooled", "sampled"),
    Metric("speculation.acceptance_length", "tokens/step", "higher", "1 + delta accepted tokens / delta drafts", None,
           "pooled", "sampled"),
    Metric("speculation.per_position", "ratio", "higher", "delta accepted at position i / delta drafts", None,
           "pooled"),
    Metric("acceptance_per_request", "tokens/step", "neutral", "per completed request: 1 + accepted drafts / verify "
           "steps from the server's per-request histogram where it sends one, else tokens after the first chunk / "
           "chunks after it (one chunk per engine step)", lambda s: request_acceptance(s.completed), "pooled"),
    Metric("server.ttft_ms", "ms", "neutral", "the server's TTFT histogram over the cell (bucket deltas; "
           "quantiles interpolated in buckets)", None, "pooled"),
    Metric("server.tpot_ms", "ms", "neutral", "the server's per-request time-per-output-token histogram",
           None, "pooled"),
    Metric("server.prefix_cache.hit_rate", "ratio", "neutral", "delta prefix-cache hit tokens / delta queried "
           "tokens", None, "pooled"),
    Metric("client.cpu_util", "cores", "neutral", "client process CPU time / wall time of the measured phase; "
           "the report warns from 0.8", None),
    Metric("client.loop_lag_p99_ms", "ms", "neutral", "p99 lateness of a 20 ms timer on the client's event loop; "
           "the report warns from 5 ms", None),
)

METRICS_BY_NAME = {metric.name: metric for metric in METRICS}


class CellSummary(BaseModel):
    """The statistics of one cell; every field but ``spec`` is a metric of ``METRICS``, same name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests: int
    completed: int
    failed: int
    warmup_excluded: int
    error_rate: float
    error_kinds: dict[str, int]
    duration_s: float
    total_input_tokens: int
    total_output_tokens: int
    ttft_ms: LatencyStats | None
    tpot_ms: LatencyStats | None
    itl_ms: LatencyStats | None
    e2el_ms: LatencyStats | None
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    goodput: float | None
    interactivity: float | None
    output_throughput_per_gpu: float | None = None
    total_token_throughput_per_gpu: float | None = None
    speculation: SpeculationStats | None = None
    acceptance_per_request: RequestAcceptance | None = None
    server: ServerStats | None = None
    """The server's own view (histograms, prefix cache, counters), beside the client's, never mixed in."""
    client: ClientLoad | None = None
    """How busy the client was; ``client.bottleneck`` means the figures may understate the server."""
    slo_claims: tuple[SloClaim, ...] = ()
    """Each percentile bound of the SLO judged on the requests: met, missed or insufficient samples."""
    repeats: tuple[CellSummary, ...] = ()
    """Each repeat's own summary, when the cell ran more than once (the fields above are then their median). When
    the cell ran on several server launches (``launches`` > 1) these are the launches' summaries, one each."""
    launches: int = 1
    """Server launches the figures pool; each launch is one sample of the launch-to-launch noise."""
    spread: dict[str, Spread] = {}
    """Metric (``ttft_ms.p99``, ``output_throughput``, ...) -> median and spread across repeats."""


def summarize(
    records: Iterable[RequestRecord], duration_s: float, slo: Slo | None = None, *,
    speculation: SpeculationStats | None = None, gpus: int | None = None, server: ServerStats | None = None,
    client: ClientLoad | None = None,
) -> CellSummary:
    """The summary of one run of a cell; ``duration_s`` is the measured phase's wall time."""
    records = list(records)
    measured = [r for r in records if not r.warmup]
    sample = CellSample(
        completed=tuple(r for r in measured if r.ok),
        failed=tuple(r for r in measured if not r.ok),
        warmup=tuple(r for r in records if r.warmup),
        duration_s=duration_s,
        slo=slo,
        gpus=gpus,
    )
    values = {metric.name: metric.compute(sample) for metric in METRICS if metric.compute is not None}
    return CellSummary(**values, speculation=speculation, server=server, client=client,
                       slo_claims=slo_claims(sample.completed, slo))
