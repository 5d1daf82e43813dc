"""A stored cell, or one launch of it, as a Benchmark Report, and the reports of a run as YAML files.

``run`` is the report's identity: its own id (the run's id, the cell's and the launch's), the run's id as the
experiment every report of it shares, the cell's start and end, and the cell's label as the description (llm-d's
viewer shows it as the run's name, so every cell of a sweep stays apart). ``results`` holds what the client
measured, in the harness's definitions (``harness.metrics.cell_summary``): requests and failures, the lengths sent
and generated, TTFT, TPOT, ITL and request latency in ms with their mean, standard deviation and percentiles, and
throughput; the server's prefix-cache hit rate and, where NVML ran, the GPUs' power and utilisation; and the
harness's extras (``report_metadata``). A cell measured on several launches reports the harness's pooled figures,
each the median of the launches' (its launches have reports of their own).

The files are named as llm-d-benchmark names its version-0.2 reports (``benchmark_report_v0.2,_<name>.yaml``), so
its analysis finds them where it looks.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import numpy as np
import yaml

from harness.export.benchmark_report import (
    AggregateLatency,
    AggregateRequestPerformance,
    AggregateRequests,
    AggregateThroughput,
    BenchmarkReport,
    ComponentObservability,
    CountStatistics,
    Observability,
    PortionStatistics,
    PowerStatistics,
    RequestPerformance,
    RequestRateStatistics,
    ResourceMetrics,
    Results,
    Run,
    RunTime,
    Statistics,
    TimeStatistics,
    TokenLatencyStatistics,
    TokenRateStatistics,
)
from harness.export.br_scenario import scenario
from harness.export.report_metadata import harness_metadata
from harness.export.stored_cell import StoredCell
from harness.metrics.cell_summary import LatencyStats
from harness.store import write_atomic

BR_FILE_PREFIX = "benchmark_report_v0.2,_"
"""llm-d-benchmark's name for its version-0.2 family of reports (its analysis globs ``benchmark_report_v0.2,_*``)."""

S = TypeVar("S", bound=Statistics)


def latency(kind: type[S], stats: LatencyStats | None) -> S | None:
    """The harness's latency distribution (ms) as a report's statistics."""
    if stats is None:
        return None
    return kind.model_validate({"mean": stats.mean, "stddev": stats.std, "p50": stats.median, "p90": stats.p90,
                                "p99": stats.p99, "p99p9": stats.p99_9})


def counts(values: Sequence[int]) -> CountStatistics | None:
    """Lengths in tokens: mean, standard deviation, range and percentiles; None for none."""
    if not values:
        return None
    a = np.asarray(values, dtype=float)
    p50, p90, p99, p999 = (float(v) for v in np.percentile(a, [50, 90, 99, 99.9]))
    return CountStatistics(mean=float(a.mean()), stddev=float(a.std()), min=float(a.min()), max=float(a.max()),
                           p50=p50, p90=p90, p99=p99, p99p9=p999)


def _requests(stored: StoredCell) -> AggregateRequests:
    s, done = stored.summary, [r for r in stored.records if r.ok]
    if done:
        inputs = counts([r.prompt_tokens if r.prompt_tokens is not None else r.input_tokens for r in done])
        outputs = counts([r.output_tokens for r in done])
    else:  # no records stored: the totals give the means and nothing else
        inputs = CountStatistics(mean=s.total_input_tokens / s.completed) if s.completed else None
        outputs = CountStatistics(mean=s.total_output_tokens / s.completed) if s.completed else None
    return AggregateRequests(total=s.requests, failures=s.failed, input_length=inputs, output_length=outputs)


def _results(stored: StoredCell, labels: Sequence[str]) -> Results:
    s = stored.summary
    figures = AggregateRequestPerformance(
        requests=_requests(stored),
        latency=AggregateLatency(time_to_first_token=latency(TimeStatistics, s.ttft_ms),
                                 time_per_output_token=latency(TokenLatencyStatistics, s.tpot_ms),
                                 inter_token_latency=latency(TokenLatencyStatistics, s.itl_ms),
                                 request_latency=latency(TimeStatistics, s.e2el_ms)),
        throughput=AggregateThroughput(
            input_token_rate=TokenRateStatistics(mean=max(s.total_token_throughput - s.output_throughput, 0.0)),
            output_token_rate=TokenRateStatistics(mean=s.output_throughput),
            total_token_rate=TokenRateStatistics(mean=s.total_token_throughput),
            request_rate=RequestRateStatistics(mean=s.request_throughput)))
    return Results(request_performance=RequestPerformance(aggregate=figures),
                   observability=Observability(components=_components(stored, labels),
                                               metadata=harness_metadata(stored)))


def _components(stored: StoredCell, labels: Sequence[str]) -> tuple[ComponentObservability, ...] | None:
    """The server's prefix cache and the GPUs' power and utilisation, for a stack of one component (a deployment's
    prefill and decode servers share the figures, which cannot be split between them)."""
    if len(labels) != 1:
        return None
    server, t = stored.summary.server, stored.telemetry
    hit_rate = server.prefix_cache.hit_rate if server and server.prefix_cache else None
    measured = t is not None and t.available
    utilisation = [d.sm_util_pct_mean for d in t.devices if d.sm_util_pct_mean is not None] if t and measured else []
    power = t.power_w_total_mean if t and measured else None
    metrics = ResourceMetrics(
        cache_hit_rate=PortionStatistics(units="fraction", mean=hit_rate) if hit_rate is not None else None,
        gpu_utilization=PortionStatistics(units="percent", mean=float(np.mean(utilisation))) if utilisation else None,
        power_consumption=PowerStatistics(mean=power) if power is not None else None)
    if metrics == ResourceMetrics():
        return None
    return (ComponentObservability(component_label=labels[0], aggregate=metrics),)


def _run(stored: StoredCell) -> Run:
    run_id = stored.run.run_id
    start = datetime.fromisoformat(stored.result.started_at)
    end = datetime.fromisoformat(stored.result.finished_at)
    description = stored.cell.label + (f" (launch {stored.launch})" if stored.launch is not None else "")
    return Run(uid=f"{run_id}-{stored.name}" if run_id else stored.name, eid=run_id,
               time=RunTime(start=start, end=end, duration=f"PT{(end - start).total_seconds():g}S"),
               description=description)


def cell_report(stored: StoredCell) -> BenchmarkReport:
    """The report of one stored cell, or of one launch of it."""
    setting = scenario(stored)
    labels = [c.metadata.label for c in setting.stack or ()]
    return BenchmarkReport(run=_run(stored), scenario=setting, results=_results(stored, labels))


def report_path(dest: Path, stored: StoredCell) -> Path:
    return dest / "br" / f"{BR_FILE_PREFIX}{stored.name}.yaml"


def write_reports(cells: Sequence[StoredCell], dest: Path) -> list[Path]:
    """One YAML file per stored cell and launch under ``dest/br/``, each through the one atomic write."""
    paths = []
    for stored in cells:
        path = report_path(dest, stored)
        write_atomic(path, yaml.safe_dump(cell_report(stored).dump(), sort_keys=False, allow_unicode=True))
        paths.append(path)
    return paths
