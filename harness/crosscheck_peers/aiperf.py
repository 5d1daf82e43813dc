"""NVIDIA's AIPerf (``aiperf profile``, 0.13.0) as a peer of the cross-check.

Asked for: the completions endpoint, streamed (``--endpoint-type completions --streaming``); ``--concurrency`` with
``--request-count`` requests, each prompt used once (``--num-dataset-entries`` the same count); random-token prompts
in vLLM's style (``--prompt-corpus random --random-corpus-style vllm``: the same symmetric length window as ours,
``--isl``/``--osl`` with ``--random-range-ratio``); ``ignore_eos`` and the temperature as extra body fields
(``--extra-inputs``); output tokens from the server's ``usage`` (``--use-server-token-count``); a fresh
``--random-seed`` per round; no warm-up, no dashboard, no server-metrics or GPU-telemetry scrape, no plots.

Read back from ``profile_export_aiperf.json`` (the summary export; each metric an object with ``unit``, ``avg``,
``p50``, ...): TTFT ``time_to_first_token`` (p50, avg), TPOT ``inter_token_latency`` (p50: AIPerf's ITL is per request
(latency - TTFT) / (output tokens - 1), vLLM's and our TPOT), ITL ``inter_chunk_latency`` (avg: every gap between
content chunks, pooled, as ours), output throughput ``output_token_throughput`` (avg), completed ``request_count``,
failed ``error_request_count`` (absent when none failed). Latencies are in ms, as the export states in each ``unit``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.crosscheck_peers.peer import PeerClient, round_seed
from harness.crosscheck_result import ClientFigures, CrosscheckSpec

NOTES = (
    "AIPerf sends text (random token ids decoded by its tokenizer, vLLM style): the server tokenizes it, and its "
    "ISL mean is reduced by the tokenizer's special tokens, as vLLM's client does; ours sends token ids.",
    "AIPerf's TTFT runs from its request start stamp to the first content chunk (a chunk carrying text), ours to the "
    "first chunk carrying tokens: the same chunk on a vLLM server.",
    "AIPerf's 'inter token latency' is per-request TPOT ((latency - TTFT) / (output tokens - 1)); its pooled gaps "
    "are 'inter chunk latency', whose mean is the ITL compared here.",
    "AIPerf's benchmark duration runs from its first request sent to its last response received (throughput); ours "
    "from the first send to the last token.",
    "AIPerf runs its workers as separate processes (ZMQ): it stamps chunks in another process than the one that "
    "plans the load, so its own CPU use is spread over several processes.",
)


def _metric(data: dict[str, Any], tag: str, stat: str) -> float:
    entry = data.get(tag)
    return float(entry[stat]) if isinstance(entry, dict) and stat in entry else float("nan")


class Aiperf(PeerClient):
    """``aiperf profile`` at a fixed concurrency on synthetic random-token prompts (see the module docstring)."""

    name = "aiperf"
    title = "AIPerf"
    executable = "aiperf"
    result_file = "artifacts/profile_export_aiperf.json"
    notes = NOTES

    def argv(self, spec: CrosscheckSpec, round_: int, run_dir: Path) -> list[str]:
        w = spec.workload
        requests = str(w.requests_for(spec.concurrency))
        body = json.dumps({"ignore_eos": True, "temperature": w.temperature})
        return [
            *self.program(spec), "profile",
            "--model", spec.model, "--url", spec.base_url, "--endpoint-type", "completions", "--streaming",
            "--tokenizer", str(spec.tokenizer_dir), "--request-timeout-seconds", str(spec.request_timeout_s),
            "--prompt-corpus", "random", "--random-corpus-style", "vllm",
            "--isl", str(w.input_tokens), "--osl", str(w.output_tokens), "--random-range-ratio", str(w.range_ratio),
            "--concurrency", str(spec.concurrency), "--request-count", requests, "--num-dataset-entries", requests,
            "--random-seed", str(round_seed(spec, round_)), "--extra-inputs", body, "--use-server-token-count",
            "--output-artifact-dir", str(run_dir / Path(self.result_file).parent), "--export-level", "summary",
            "--ui-type", "none", "--no-server-metrics", "--no-gpu-telemetry", "--no-auto-plot",
        ]

    def figures(self, result: Path, round_: int) -> ClientFigures:
        data = json.loads(result.read_text())
        failed = data.get("error_request_count", {}).get("avg", 0)
        return ClientFigures(
            client=self.name, round=round_, median_ttft_ms=_metric(data, "time_to_first_token", "p50"),
            median_tpot_ms=_metric(data, "inter_token_latency", "p50"),
            mean_itl_ms=_metric(data, "inter_chunk_latency", "avg"),
            output_throughput=_metric(data, "output_token_throughput", "avg"),
            completed=int(_metric(data, "request_count", "avg")), failed=int(failed),
            mean_ttft_ms=_metric(data, "time_to_first_token", "avg"))
