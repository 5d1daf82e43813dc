"""The fake engine's settings (``FakeConfig``, from its command line) and its vLLM-named Prometheus counters, which
move with the tokens it streams so that a cell's counter deltas can be checked end to end."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter

DEFAULT_MODEL = "fake-model"


@dataclass(frozen=True, slots=True)
class FakeConfig:
    model: str | None = None
    """The served model name; None serves whatever name a request asks for (and lists ``fake-model``)."""
    ttft_ms: float = 20.0
    itl_ms: float = 5.0
    tokens_per_chunk: int = 1
    startup_delay_s: float = 0.0
    die_after_requests: int | None = None
    """Exit abruptly (status 1) on receiving generation request N+1."""
    error_rate: float = 0.0
    """Fraction of generation requests answered with HTTP 500."""
    speculative_k: int = 0
    """Draft tokens per decode step; 0 turns speculation (and its counters) off, as on a real server."""
    spec_accept_rate: float = 0.5
    seed: int = 0
    max_model_len: int = 4096
    itl_per_active_ms: float = 0.0
    """Added to each decode step per stream in flight: latency that grows with load."""


class FakeCounters:
    """vLLM-named Prometheus counters in a registry of this app's own (apps in one process never collide)."""

    def __init__(self, config: FakeConfig) -> None:
        self.registry = CollectorRegistry()
        labels = ["model_name", "engine"]
        engine = (config.model or DEFAULT_MODEL, "0")

        def counter(name: str, doc: str, *extra: str) -> Counter:
            return Counter(name, doc, labelnames=[*labels, *extra], registry=self.registry)

        def engine_counter(name: str, doc: str) -> Counter:
            return counter(name, doc).labels(*engine)

        self.prompt_tokens = engine_counter("vllm:prompt_tokens", "Number of prefill tokens processed.")
        self.generation_tokens = engine_counter("vllm:generation_tokens", "Number of generation tokens processed.")
        self.preemptions = engine_counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.")
        self.prefix_queries = engine_counter("vllm:prefix_cache_queries", "Prefix cache queries, in tokens.")
        self.prefix_hits = engine_counter("vllm:prefix_cache_hits", "Prefix cache hits, in tokens.")
        self.success = counter("vllm:request_success", "Count of successfully processed requests.",
                               "finished_reason").labels(*engine, "length")
        self.speculative = config.speculative_k > 0
        if self.speculative:
            self.drafts = engine_counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.")
            self.draft_tokens = engine_counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.")
            self.accepted = engine_counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.")
            per_pos = counter("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.",
                              "position")
            self.accepted_per_pos = [per_pos.labels(*engine, str(i)) for i in range(config.speculative_k)]
