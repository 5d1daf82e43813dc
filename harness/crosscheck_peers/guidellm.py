"""GuideLLM (``guidellm run``, 0.8.1) as a peer of the cross-check.

Asked for (each option is ``kind=...,key=value``, parsed by GuideLLM into its pydantic arguments): the
``openai_http`` backend on ``/v1/completions``, streamed, HTTP/1.1 (the engines serve no HTTP/2 in clear), the
temperature as an extra body field (``extras.body.temperature``); ``synthetic_text`` data whose prompt and output
lengths are uniform between our bounds (GuideLLM samples uniformly when given a min and a max and no stdev); a
``concurrent`` profile of ``streams`` = the concurrency, stopped by ``max_requests``; a ``static`` seed, fresh per
round; the tokenizer of the served model; the ``json`` output. With output tokens given, GuideLLM itself sets
``max_tokens``, ``ignore_eos: true`` and ``stop: null`` on every completions request.

Read back from the JSON output (``benchmarks[0].metrics``, each a distribution with ``successful`` /
``errored`` / ``incomplete`` / ``total`` summaries of ``mean``, ``median``, ``percentiles``): TTFT
``time_to_first_token_ms``, TPOT ``inter_token_latency_ms`` (GuideLLM's ITL is per request (last token - first
token) / (output tokens - 1), vLLM's and our TPOT; its ``time_per_output_token_ms`` includes the first token), ITL
the mean of that same distribution (weighted by each request's output tokens - 1, so its mean is the pooled gap),
output throughput ``output_tokens_per_second`` (mean: output tokens over the benchmark's window), completed and
failed from ``request_totals``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.crosscheck_peers.peer import PeerClient, length_bounds, round_seed
from harness.crosscheck_result import ClientFigures, CrosscheckSpec

NOTES = (
    "GuideLLM sends text (synthetic words sized with the model's tokenizer): the server tokenizes it; ours sends "
    "token ids.",
    "GuideLLM's TPOT includes the first token ((last token - request start) / output tokens); the TPOT compared here "
    "is its 'inter token latency', which excludes it, as ours and vLLM's do.",
    "GuideLLM weights its ITL distribution by each request's output tokens - 1: its median TPOT is a token-weighted "
    "median (ours: the median over requests); its mean is the pooled per-token gap, compared with our pooled ITL. On a "
    "server that streams several tokens per chunk it spreads a chunk's gap over its tokens, where ours keeps the "
    "chunk gaps.",
    "GuideLLM's throughput is the mean of its output-token rate over its benchmark's measured window (its start "
    "and end times), not over our first send to last token.",
    "GuideLLM validates the backend with a GET /health before the run (outside the measured requests).",
)


def _summary(metrics: dict[str, Any], name: str) -> dict[str, Any]:
    summary: dict[str, Any] = metrics[name]["successful"]
    return summary


class Guidellm(PeerClient):
    """``guidellm run`` with a concurrent profile on synthetic text (see the module docstring)."""

    name = "guidellm"
    title = "GuideLLM"
    executable = "guidellm"
    result_file = "benchmarks.json"
    notes = NOTES

    def argv(self, spec: CrosscheckSpec, round_: int, run_dir: Path) -> list[str]:
        w = spec.workload
        in_low, in_high = length_bounds(w.input_tokens, w.range_ratio)
        out_low, out_high = length_bounds(w.output_tokens, w.range_ratio)
        backend = (f"kind=openai_http,target={spec.base_url},model={spec.model},request_format=/v1/completions,"
                   f"stream=true,http2=false,timeout={spec.request_timeout_s},extras.body.temperature={w.temperature}")
        data = (f"kind=synthetic_text,prompt_tokens={w.input_tokens},prompt_tokens_min={in_low},"
                f"prompt_tokens_max={in_high},output_tokens={w.output_tokens},output_tokens_min={out_low},"
                f"output_tokens_max={out_high}")
        return [
            *self.program(spec), "run", "--backend", backend, "--data", data,
            "--tokenizer", f"kind=hf_auto,model={spec.tokenizer_dir}",
            "--profile", f"kind=concurrent,streams={spec.concurrency}",
            "--constraint", f"kind=max_requests,count={w.requests_for(spec.concurrency)}",
            "--seed", f"kind=static,value={round_seed(spec, round_)}",
            "--output", f"kind=json,path={run_dir / self.result_file}", "--disable-console-interactive",
        ]

    def figures(self, result: Path, round_: int) -> ClientFigures:
        metrics = json.loads(result.read_text())["benchmarks"][0]["metrics"]
        totals = metrics["request_totals"]
        ttft, itl = _summary(metrics, "time_to_first_token_ms"), _summary(metrics, "inter_token_latency_ms")
        return ClientFigures(
            client=self.name, round=round_, median_ttft_ms=float(ttft["median"]),
            median_tpot_ms=float(itl["median"]), mean_itl_ms=float(itl["mean"]),
            output_throughput=float(_summary(metrics, "output_tokens_per_second")["mean"]),
            completed=int(totals["successful"]), failed=int(totals["errored"]) + int(totals["incomplete"]),
            mean_ttft_ms=float(ttft["mean"]))
