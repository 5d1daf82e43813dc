"""Regenerate ``vllm_metrics_{before,after}.txt``: a vLLM /metrics exposition written by prometheus_client.

No vLLM server was at hand to record, so this declares the metrics exactly as vLLM 0.32 does
(``vllm/v1/metrics/loggers.py``, ``vllm/v1/spec_decode/metrics.py``: names, help texts, the ``model_name`` and
``engine`` labels, ``position`` for the per-position counter, ``finished_reason`` for request_success) for a
server with two data-parallel engines and MTP k=3, and renders it with ``generate_latest``, so the text format
(``_total`` samples, ``_created`` gauges, label order) is prometheus_client's own.

    .venv/bin/python tests/unit/servers/data/make_vllm_metrics.py
"""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

MODEL = "tiny-dsv3-mtp"
ENGINES = ("0", "1")
K = 3
# Cumulative values per engine: (drafts, draft_tokens, accepted, accepted per position, prompt, generation)
BEFORE = {"0": (100, 300, 150, (70, 50, 30), 4000, 2000), "1": (80, 240, 120, (56, 40, 24), 3500, 1800)}
AFTER = {"0": (160, 480, 246, (112, 82, 52), 6000, 3100), "1": (140, 420, 216, (98, 72, 46), 5600, 2950)}


def exposition(values: dict[str, tuple[int, int, int, tuple[int, ...], int, int]]) -> bytes:
    registry = CollectorRegistry()
    labels = ["model_name", "engine"]
    running = Gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
                    labelnames=labels, registry=registry)
    drafts = Counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", labels, registry=registry)
    draft_tokens = Counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", labels,
                           registry=registry)
    accepted = Counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", labels,
                       registry=registry)
    per_pos = Counter("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.",
                      labels + ["position"], registry=registry)
    preemptions = Counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", labels,
                          registry=registry)
    prompt = Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", labels, registry=registry)
    generation = Counter("vllm:generation_tokens", "Number of generation tokens processed.", labels,
                         registry=registry)
    success = Counter("vllm:request_success", "Count of successfully processed requests.",
                      labels + ["finished_reason"], registry=registry)
    ttft = Histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                     labels, buckets=(0.01, 0.05, 0.1, 0.5, 1.0, 5.0), registry=registry)
    for engine, (n_drafts, n_draft_tokens, n_accepted, by_pos, n_prompt, n_generation) in values.items():
        running.labels(MODEL, engine).set(0)
        drafts.labels(MODEL, engine).inc(n_drafts)
        draft_tokens.labels(MODEL, engine).inc(n_draft_tokens)
        accepted.labels(MODEL, engine).inc(n_accepted)
        for position in range(K):
            per_pos.labels(MODEL, engine, str(position)).inc(by_pos[position])
        preemptions.labels(MODEL, engine)
        prompt.labels(MODEL, engine).inc(n_prompt)
        generation.labels(MODEL, engine).inc(n_generation)
        for reason in ("stop", "length", "abort", "error", "repetition"):
            success.labels(MODEL, engine, reason).inc(n_prompt // 100 if reason == "length" else 0)
        for seconds in (0.02, 0.2, 0.7):
            ttft.labels(MODEL, engine).observe(seconds)
    return generate_latest(registry)


if __name__ == "__main__":
    here = Path(__file__).parent
    (here / "vllm_metrics_before.txt").write_bytes(exposition(BEFORE))
    (here / "vllm_metrics_after.txt").write_bytes(exposition(AFTER))
