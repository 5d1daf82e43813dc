"""kubernetes-sigs' inference-perf (``inference-perf``, 0.7.0; Python >= 3.12) as a peer of the cross-check.

It is driven by a config file, and every key of that file is also a ``--section.key`` flag: the whole run is asked
for on the command line, no file is written. Asked for: the completions API, streamed (``--api.type completion
--api.streaming true``); ``ignore_eos`` (``--server.ignore_eos true``); ``random`` data (random token ids decoded to
text of the exact length) with prompt and output lengths uniform between our bounds (``fixed`` when the range ratio
is 0); a ``concurrent`` load of one stage, ``num_requests`` at ``concurrency_level``; a fresh ``--load.base_seed`` per
round (it seeds the data generator); output tokens as the server's ``usage`` counts them
(``--report.request_lifecycle.use_server_output_tokens true``); reports to the round's directory.

It cannot be asked for a temperature: its completion requests carry ``model``, ``prompt``, ``max_tokens``,
``ignore_eos``, ``stream`` and ``stream_options`` only, so the server samples with its own default (the length is
fixed by ``ignore_eos`` either way).

Read back from ``summary_lifecycle_metrics.json`` (seconds, not ms): ``successes.latency.time_to_first_token``
(median, mean), ``time_per_output_token`` (median: per request (last token - first token) / (output tokens - 1)),
``inter_token_latency`` (mean: per-token gaps pooled over requests), ``successes.throughput.output_tokens_per_sec``,
``successes.count`` and ``failures.count``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.crosscheck_peers.peer import PeerClient, length_bounds, ms, round_seed
from harness.crosscheck_result import ClientFigures, CrosscheckSpec

NOTES = (
    "inference-perf sends text (random token ids decoded by its tokenizer); the server tokenizes it; ours sends "
    "token ids.",
    "inference-perf sets no temperature (its requests cannot carry one): the server samples with its default, ours "
    "and vLLM's ask for the workload's (greedy by default).",
    "inference-perf re-tokenizes each chunk's text with its tokenizer and stamps every token of a chunk with the "
    "chunk's arrival: its ITL pools per-token gaps, zeros included where a chunk decodes to several tokens, and "
    "its TTFT ends at the first chunk that decodes to text. On a server streaming one token per chunk that is "
    "ours; on one that bundles tokens, its mean ITL reads lower than our per-chunk gaps.",
    "inference-perf's throughput divides the server-counted output tokens by the wall time from its first request's "
    "start to its last request's end.",
    "inference-perf sends from worker processes of its own (``load.num_workers``, by default one per CPU): its "
    "CPU cost is spread over them.",
)


def _seconds_as_ms(latency: dict[str, Any], name: str, stat: str) -> float:
    """One statistic of a latency summary in ms; NaN where inference-perf wrote none (no request got that far)."""
    summary = latency.get(name)
    return ms(float(summary[stat])) if summary else float("nan")


def _distribution(kind: str, mean: int, range_ratio: float, count: int) -> list[str]:
    low, high = length_bounds(mean, range_ratio)
    shape = "uniform" if high > low else "fixed"
    return [f"--data.{kind}_distribution.type", shape, f"--data.{kind}_distribution.min", str(low),
            f"--data.{kind}_distribution.max", str(high), f"--data.{kind}_distribution.mean", str(mean),
            f"--data.{kind}_distribution.total_count", str(count)]


class InferencePerf(PeerClient):
    """``inference-perf`` with a one-stage concurrent load on random data (see the module docstring)."""

    name = "inference-perf"
    title = "inference-perf"
    executable = "inference-perf"
    result_file = "summary_lifecycle_metrics.json"
    notes = NOTES

    def argv(self, spec: CrosscheckSpec, round_: int, run_dir: Path) -> list[str]:
        w = spec.workload
        requests = w.requests_for(spec.concurrency)
        stage = json.dumps([{"num_requests": requests, "concurrency_level": spec.concurrency}])
        return [
            *self.program(spec), "--api.type", "completion", "--api.streaming", "true",
            "--server.base_url", spec.base_url, "--server.model_name", spec.model, "--server.ignore_eos", "true",
            "--tokenizer.pretrained_model_name_or_path", str(spec.tokenizer_dir), "--data.type", "random",
            *_distribution("input", w.input_tokens, w.range_ratio, requests),
            *_distribution("output", w.output_tokens, w.range_ratio, requests),
            "--load.type", "concurrent", "--load.stages", stage, "--load.base_seed", str(round_seed(spec, round_)),
            "--load.request_timeout", str(spec.request_timeout_s),
            "--report.request_lifecycle.use_server_output_tokens", "true",
            "--storage.local_storage.path", str(run_dir),
        ]

    def figures(self, result: Path, round_: int) -> ClientFigures:
        data = json.loads(result.read_text())
        latency = data["successes"]["latency"]
        return ClientFigures(
            client=self.name, round=round_, median_ttft_ms=_seconds_as_ms(latency, "time_to_first_token", "median"),
            median_tpot_ms=_seconds_as_ms(latency, "time_per_output_token", "median"),
            mean_itl_ms=_seconds_as_ms(latency, "inter_token_latency", "mean"),
            output_throughput=float(data["successes"]["throughput"]["output_tokens_per_sec"]),
            completed=int(data["successes"]["count"]), failed=int(data["failures"]["count"]),
            mean_ttft_ms=_seconds_as_ms(latency, "time_to_first_token", "mean"))
