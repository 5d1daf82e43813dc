"""A fake OpenAI-compatible server: a test instrument for the client, the runner and fault handling.

It speaks enough of vLLM's HTTP surface for the harness (``/health``, ``/v1/models``, ``/version``, streaming
and plain ``/v1/completions`` and ``/v1/chat/completions`` with vLLM's usage chunks, ``/metrics`` with vLLM's
counter names) and generates ``max_tokens`` words at a configured pace. Its spec-decode counters move with
the tokens it streams, so per-cell deltas can be checked end to end. Faults on demand: a slow start, a failed
start, random 500s, and an abrupt crash mid-cell. It never measures anything: ``make bench`` runs real engines.

    python -m harness_testing.fake_engine --port 8123 --ttft-ms 20 --itl-ms 5 --speculative-k 2 --spec-accept-rate 0.6

Load: ``--itl-per-active-ms X`` adds X ms to every decode step per stream in flight, so TPOT grows linearly with
concurrency (a known latency curve, whose knee an SLO search must find). Prefix cache: a chat request whose leading
messages repeat an earlier request's counts those messages' tokens as cached (``usage.prompt_tokens_details`` and
vLLM's ``prefix_cache_*`` counters), as an engine's block cache would. Every request body and every answer's text
are kept on the app (``app.state.fake``) for tests that check what a client sent back.

Speculation (``--speculative-k K`` > 0): after the first token, every decode step drafts K tokens and accepts them
in order while each passes with probability ``--spec-accept-rate`` (so position i is accepted with probability
rate^(i+1)); the step streams 1 + accepted tokens in one chunk. ``--tokens-per-chunk`` applies without it.
Nothing essential goes to stdout; one line per request goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harness_testing.fake_config import DEFAULT_MODEL, FakeConfig, FakeCounters
from harness_testing.fake_stream import FakeStream

log = logging.getLogger("harness_testing.fake_engine")

class FakeServer:
    """The app's state and handlers; ``exit_process`` is a seam so tests can see a crash without dying."""

    def __init__(self, config: FakeConfig, exit_process: Callable[[int], None] = os._exit) -> None:
        self.config = config
        self.exit_process = exit_process
        self.started_at = time.monotonic()
        self.generation_requests = 0
        self.fault_rng = random.Random(config.seed)
        self.counters = FakeCounters(config)
        self.active = 0
        """Streams being generated now."""
        self.bodies: list[dict[str, Any]] = []
        """Every generation request's body, in arrival order."""
        self.answers: dict[str, str] = {}
        """Response id -> the whole text generated for it."""
        self.seen_prefixes: set[str] = set()

    def cached_tokens(self, messages: Any) -> int:
        """Tokens of the longest run of leading messages an earlier request sent too (whole messages only)."""
        if not isinstance(messages, list):
            return 0
        cached = 0
        for end in range(1, len(messages) + 1):
            key = json.dumps(messages[:end], sort_keys=True)
            if key in self.seen_prefixes:
                cached = _count_prompt(messages[:end])
            self.seen_prefixes.add(key)
        return cached

    def starting(self) -> bool:
        return time.monotonic() - self.started_at < self.config.startup_delay_s

    def plan_steps(self, rng: random.Random, max_tokens: int) -> list[tuple[int, int | None]]:
        """(tokens, accepted drafts or None without speculation) per streamed chunk; the first is prefill's."""
        config, planned = self.config, 1
        steps: list[tuple[int, int | None]] = [(1, None)]
        while planned < max_tokens:
            left = max_tokens - planned
            if not self.counters.speculative:
                steps.append((min(config.tokens_per_chunk, left), None))
            else:
                accepted = 0
                while accepted < config.speculative_k and rng.random() < config.spec_accept_rate:
                    accepted += 1
                accepted = min(accepted, left - 1)
                steps.append((1 + accepted, accepted))
            planned += steps[-1][0]
        return steps

    def count_step(self, tokens: int, accepted: int | None) -> None:
        """Move the counters as a step is streamed, so a scrape mid-request sees what was sent so far."""
        counters = self.counters
        counters.generation_tokens.inc(tokens)
        if accepted is not None:
            counters.drafts.inc()
            counters.draft_tokens.inc(self.config.speculative_k)
            counters.accepted.inc(accepted)
            for position in range(accepted):
                counters.accepted_per_pos[position].inc()

    async def health(self, request: Request) -> Response:
        return Response(status_code=503 if self.starting() else 200)

    async def models(self, request: Request) -> Response:
        name = self.config.model or DEFAULT_MODEL
        card = {"id": name, "object": "model", "created": int(time.time()), "owned_by": "fake", "root": name,
                "max_model_len": self.config.max_model_len}
        return JSONResponse({"object": "list", "data": [card]})

    async def version(self, request: Request) -> Response:
        return JSONResponse({"version": "fake-0.1"})

    async def metrics(self, request: Request) -> Response:
        return Response(generate_latest(self.counters.registry), media_type=CONTENT_TYPE_LATEST)

    async def completions(self, request: Request) -> Response:
        return await self._generate(request, chat=False)

    async def chat_completions(self, request: Request) -> Response:
        return await self._generate(request, chat=True)

    async def _generate(self, request: Request, *, chat: bool) -> Response:
        config = self.config
        self.generation_requests += 1
        number = self.generation_requests
        if config.die_after_requests is not None and number > config.die_after_requests:
            log.error("request %d: dying as told (--die-after-requests %d)", number, config.die_after_requests)
            self.exit_process(1)
            return _error(500, "the server died")  # only reached when exit_process is a test double
        try:
            body = json.loads(await request.body())
        except ValueError:
            return self._logged(number, _error(400, "the body is not JSON"))
        if not isinstance(body, dict):
            return self._logged(number, _error(400, "the body must be a JSON object"))
        limit_keys = ("max_completion_tokens", "max_tokens") if chat else ("max_tokens",)
        max_tokens = next((body[key] for key in limit_keys if key in body), 16)
        if self.starting():
            return self._logged(number, _error(503, "the server is starting"))
        if config.model is not None and body.get("model", config.model) != config.model:
            return self._logged(number, _error(404, f"The model `{body.get('model')}` does not exist."))
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            return self._logged(number, _error(400, "max_tokens must be a positive integer"))
        if self.fault_rng.random() < config.error_rate:
            return self._logged(number, _error(500, "injected failure (--error-rate)"))
        self.bodies.append(body)
        prompt_tokens = _count_prompt(body.get("messages") if chat else body.get("prompt"))
        cached = self.cached_tokens(body.get("messages")) if chat else 0
        self.counters.prompt_tokens.inc(prompt_tokens)
        self.counters.prefix_queries.inc(prompt_tokens)
        self.counters.prefix_hits.inc(cached)
        log.info("request %d: %s prompt_tokens=%d max_tokens=%d stream=%s", number, request.url.path,
                 prompt_tokens, max_tokens, bool(body.get("stream")))
        model = str(body.get("model") or config.model or DEFAULT_MODEL)
        stream = FakeStream(self, number, chat, model, prompt_tokens, random.Random(config.seed * 1_000_003 + number),
                         cached)
        options = body.get("stream_options") or {}
        if body.get("stream"):
            return StreamingResponse(
                stream.events(max_tokens, bool(options.get("include_usage")),
                              bool(options.get("continuous_usage_stats"))),
                media_type="text/event-stream",
            )
        return JSONResponse(await stream.whole(max_tokens))

    def _logged(self, number: int, response: Response) -> Response:
        log.info("request %d: answered %d", number, response.status_code)
        return response


def _count_prompt(prompt: Any) -> int:
    """Prompt tokens, roughly: token ids count exactly, text counts words, chat adds a small template."""
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return len(prompt)
    if isinstance(prompt, list):
        return sum(_count_prompt(item.get("content") if isinstance(item, dict) else item) + 4 for item in prompt)
    return max(1, len(str(prompt or "").split()))


def _error(status: int, message: str) -> JSONResponse:
    """vLLM's error body."""
    kind = {400: "BadRequestError", 404: "NotFoundError", 503: "ServiceUnavailableError"}.get(
        status, "InternalServerError")
    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": status}},
                        status_code=status)


def create_app(config: FakeConfig, *, exit_process: Callable[[int], None] = os._exit) -> Starlette:
    server = FakeServer(config, exit_process)
    app = Starlette(routes=[
        Route("/health", server.health),
        Route("/v1/models", server.models),
        Route("/version", server.version),
        Route("/metrics", server.metrics),
        Route("/v1/completions", server.completions, methods=["POST"]),
        Route("/v1/chat/completions", server.chat_completions, methods=["POST"]),
    ])
    app.state.fake = server
    return app


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    defaults = FakeConfig()
    parser = argparse.ArgumentParser(prog="python -m harness_testing.fake_engine", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default=None, help="the served model name (default: answer to any name)")
    parser.add_argument("--ttft-ms", type=float, default=defaults.ttft_ms)
    parser.add_argument("--itl-ms", type=float, default=defaults.itl_ms)
    parser.add_argument("--tokens-per-chunk", type=int, default=defaults.tokens_per_chunk)
    parser.add_argument("--startup-delay-s", type=float, default=defaults.startup_delay_s)
    parser.add_argument("--fail-startup", action="store_true", help="print an error to stderr and exit 1")
    parser.add_argument("--die-after-requests", type=int, default=None)
    parser.add_argument("--error-rate", type=float, default=defaults.error_rate)
    parser.add_argument("--speculative-k", type=int, default=defaults.speculative_k)
    parser.add_argument("--spec-accept-rate", type=float, default=defaults.spec_accept_rate)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--itl-per-active-ms", type=float, default=defaults.itl_per_active_ms)
    parser.add_argument("--enable-prompt-tokens-details", action="store_true", help="accepted as vLLM does; the "
                        "fake always reports cached tokens on chat")
    # a replica across nodes, spelled as vLLM spells it: the head serves, --headless ranks only hold their node
    parser.add_argument("--nnodes", type=int, default=1)
    parser.add_argument("--node-rank", type=int, default=0)
    parser.add_argument("--master-addr", default=None)
    parser.add_argument("--master-port", type=int, default=None)
    parser.add_argument("--headless", action="store_true")
    parser.add_argument("--kv-transfer-config", default=None, help="a prefill or decode part (logged, no transfer)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="fake-server %(levelname)s %(message)s")
    if args.fail_startup:
        log.error("startup failed: --fail-startup was given")
        sys.exit(1)
    if args.nnodes > 1:
        log.info("rank %d of %d on node %s, head at %s:%s", args.node_rank, args.nnodes,
                 os.environ.get("SLURMD_NODENAME", "?"), args.master_addr, args.master_port)
    if args.kv_transfer_config:
        log.info("disaggregated part: %s", json.loads(args.kv_transfer_config)["kv_role"])
    if args.headless:
        while True:  # a follower rank: it holds its node until the replica is stopped
            time.sleep(3600)
    config = FakeConfig(
        model=args.model, ttft_ms=args.ttft_ms, itl_ms=args.itl_ms, tokens_per_chunk=args.tokens_per_chunk,
        startup_delay_s=args.startup_delay_s, die_after_requests=args.die_after_requests,
        error_rate=args.error_rate, speculative_k=args.speculative_k, spec_accept_rate=args.spec_accept_rate,
        seed=args.seed, itl_per_active_ms=args.itl_per_active_ms,
    )
    import uvicorn  # here, not at the top: importing the app for tests needs no server

    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
