"""Client benchmark (``make client-bench``): the streamed-token rate our client sustains, next to ``vllm bench
serve``'s, same server; then what our client's timestamping adds under load.

A loopback OpenAI-compatible server (``harness_testing.loopback``, its own process, on uvloop) streams tokens as fast
as the socket takes them, so the client is the bottleneck by construction. Each client runs in a fresh process of
its own against it, at concurrency 64 and 256, in alternating order; the ratio ours / vLLM's of output tokens per
second is measured in the same run. Then the timestamping check: the server paces chunks every 10 ms and stamps
each with its send time (CLOCK_MONOTONIC, shared by both processes); how much later our client stamps the
chunk's arrival, at concurrency 64 above the floor the same measure shows at concurrency 1 (loopback delivery and
waking a sleeping process, the machine's share), is what client-side timestamping adds. Ours reads the kernel's
receive timestamp (SO_TIMESTAMPNS), so a burst of chunks queued behind each other in the client is still stamped
when each arrived; vLLM's client stamps after parsing each chunk. The targets the client was built to: a ratio of
at least ``TARGET_RATIO`` at concurrency 256, and timestamping that adds less than ``TARGET_ADDED_MS`` at p99; the
command exits 1 when either is missed. The results: ``docs/studies/client.md``.

    .venv/bin/python -m tools.client_bench [--concurrency 64 256] [--rounds 2] [--runs 3] [--tokens 256]

Not part of ``make test``: it is a measurement. Run it on an otherwise idle machine; the server and both clients
share its cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from harness.servers.process import free_port

ROOT = Path(__file__).resolve().parents[1]
INPUT_TOKENS = 32
PACED_ITL_MS = 10.0
PACED_CONCURRENCY = 64
PACED_TOKENS = 100
TARGET_RATIO = 1.5
"""Ours ÷ vLLM's output tokens per CPU-second at concurrency 256, at least."""
TARGET_ADDED_MS = 0.5
"""What our timestamping adds at p99 over the machine's own floor, at most."""


class Figures(TypedDict):
    """One client run: output tok/s (wall and per CPU-second of its load phase), its requests, and per stamped
    chunk how much later the client stamped it than the server sent it."""

    tok_s: float
    tok_per_cpu_s: float
    completed: int
    failed: int
    lags_ms: list[float]


@dataclass(frozen=True, slots=True)
class Throughput:
    """Both clients at one concurrency, medians over their runs, and whether ours meets the target."""

    concurrency: int
    runs: int
    ours_tok_s: float
    vllm_tok_s: float
    ours_per_cpu_s: float
    vllm_per_cpu_s: float

    @property
    def wall_ratio(self) -> float:
        return self.ours_tok_s / self.vllm_tok_s

    @property
    def cpu_ratio(self) -> float:
        """The verdict's ratio: on a shared machine a client's wall rate measures the share of a core the scheduler
        gave it; per CPU-second it is the rate one free core sustains (on an idle machine the two agree)."""
        return self.ours_per_cpu_s / self.vllm_per_cpu_s

    @property
    def ok(self) -> bool:
        return self.cpu_ratio >= TARGET_RATIO


def figures_of(data: dict[str, Any]) -> Figures:
    """A worker's JSON line, checked field by field (a worker of another version fails here, not in a median)."""
    return {"tok_s": float(data["tok_s"]), "tok_per_cpu_s": float(data["tok_per_cpu_s"]),
            "completed": int(data["completed"]), "failed": int(data["failed"]),
            "lags_ms": [float(lag) for lag in data["lags_ms"]]}


def throughput(concurrency: int, ours: Sequence[Figures], theirs: Sequence[Figures]) -> Throughput:
    return Throughput(concurrency, len(ours), statistics.median(r["tok_s"] for r in ours),
                      statistics.median(r["tok_s"] for r in theirs),
                      statistics.median(r["tok_per_cpu_s"] for r in ours),
                      statistics.median(r["tok_per_cpu_s"] for r in theirs))


def lag_quantiles(lags_ms: Sequence[float]) -> tuple[float, float]:
    """Median and p99 (the nearest rank below) of the stamped chunks' lags."""
    ordered = sorted(lags_ms)
    return statistics.median(ordered), ordered[int(0.99 * (len(ordered) - 1))]


def tokenizer_dir(root: Path) -> Path:
    """A word-level tokenizer both clients can load (ours reads tokenizer.json, vLLM's uses transformers)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {"<unk>": 0, "</s>": 1, **{f"w{i}": i + 2 for i in range(1000)}}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.add_special_tokens(["<unk>", "</s>"])
    tokenizer.save(str(root / "tokenizer.json"))
    (root / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>", "eos_token": "</s>"}))
    return root


@contextmanager
def loopback(ttft_ms: float, itl_ms: float, *, stamp: bool = False) -> Iterator[str]:
    """The loopback server in a process of its own (the clients must not share its interpreter); yields its URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "harness_testing.loopback", "--port", str(port), "--uvloop",
                             "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms), *(["--stamp"] if stamp else [])],
                            cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the loopback server did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def stamping(lags: list[float]) -> Iterator[None]:
    """Instrument our client while inside: for chunks the server stamped with ``sent_at``, append how much later
    the client stamped their arrival (ms). The stamp itself is taken before this runs (on the read); never on in
    the throughput runs, since the instrument costs CPU."""
    from harness.load.openai_stream import StreamState

    feed = StreamState.feed

    def stamped_feed(self: StreamState, data: bytes, at: float) -> bool:
        mark = data.find(b'"sent_at":')
        if mark >= 0:
            lags.append((at - float(data[mark + 10:data.index(b"}", mark)])) * 1000.0)
        return feed(self, data, at)

    StreamState.feed = stamped_feed  # type: ignore[method-assign]
    try:
        yield
    finally:
        StreamState.feed = feed  # type: ignore[method-assign]


async def ours(url: str, tokenizer: Path, concurrency: int, requests: int, tokens: int,
               stamped: bool = False) -> Figures:
    """One run of our client (the harness's load runner, as a cell runs it)."""
    from harness.config import RandomWorkload
    from harness.load import LoadSpec, run_load
    from harness.metrics import summarize

    lags: list[float] = []
    workload = RandomWorkload(input_tokens=INPUT_TOKENS, output_tokens=tokens, num_requests=requests,
                              warmup_requests=0)
    spec = LoadSpec(base_url=url, model="loopback", workload=workload, concurrency=concurrency,
                    tokenizer_dir=tokenizer, progress=False)
    if stamped:
        with stamping(lags):
            result = await run_load(spec)
    else:
        result = await run_load(spec)
    summary = summarize(result.records, result.duration_s)
    if result.client is None:
        raise RuntimeError("the load runner measured no client CPU time")
    return {"tok_s": summary.output_throughput, "tok_per_cpu_s": summary.total_output_tokens / result.client.cpu_s,
            "completed": summary.completed, "failed": summary.failed, "lags_ms": lags}


def theirs(url: str, tokenizer: Path, concurrency: int, requests: int, tokens: int, stamped: bool = False) -> Figures:
    """One run of ``vllm bench serve``'s client, through its own argument parser and ``main``."""
    import types

    import vllm.benchmarks.lib.endpoint_request_func as request_funcs
    import vllm.benchmarks.serve as serve
    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as serve_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    lags: list[float] = []
    if stamped:
        # vLLM's client stamps a chunk right after json.loads of it: the end of that call is its stamp.
        def loads(text: str) -> object:
            event = json.loads(text)
            if isinstance(event, dict) and "sent_at" in event:
                lags.append((time.perf_counter() - event["sent_at"]) * 1000.0)
            return event

        request_funcs.json = types.SimpleNamespace(loads=loads, dumps=json.dumps, JSONDecodeError=json.JSONDecodeError)

    cpu: list[float] = []
    measured = serve.benchmark

    async def timed(*args: object, **kwargs: object) -> object:  # CPU over its load phase only, as for ours
        start = time.process_time()
        try:
            return await measured(*args, **kwargs)
        finally:
            cpu.append(time.process_time() - start)

    serve.benchmark = timed
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    with tempfile.TemporaryDirectory() as tmp:
        serve_main(parser.parse_args([
            "--backend", "openai", "--base-url", url, "--model", "loopback", "--tokenizer", str(tokenizer),
            "--dataset-name", "random", "--random-input-len", str(INPUT_TOKENS), "--random-output-len", str(tokens),
            "--num-prompts", str(requests), "--max-concurrency", str(concurrency), "--request-rate", "inf",
            "--ignore-eos", "--num-warmups", "0", "--ready-check-timeout-sec", "0", "--disable-tqdm",
            "--save-result", "--result-dir", tmp, "--result-filename", "r.json"]))
        data = json.loads((Path(tmp) / "r.json").read_text())
    return {"tok_s": float(data["output_throughput"]), "tok_per_cpu_s": data["total_output_tokens"] / cpu[0],
            "completed": int(data["completed"]), "failed": int(data["failed"]), "lags_ms": lags}


def worker(client: str, url: str, tokenizer: Path, concurrency: int, requests: int, tokens: int, runs: int,
           stamped: bool) -> None:
    """``runs`` runs of one client in this (fresh) process, back to back; prints one JSON line per run."""
    for _ in range(runs):
        if client == "ours":
            figures = asyncio.run(ours(url, tokenizer, concurrency, requests, tokens, stamped))
        else:
            figures = theirs(url, tokenizer, concurrency, requests, tokens, stamped)
        print("RESULT " + json.dumps(figures), flush=True)


def run_client(client: str, url: str, tokenizer: Path, concurrency: int, requests: int, tokens: int,
               runs: int = 1, stamped: bool = False) -> list[Figures]:
    """Runs of one client in a process of its own (vLLM's import is paid once per process, not per run)."""
    argv = [sys.executable, "-m", "tools.client_bench", "--worker", client, "--url", url, "--tokenizer",
            str(tokenizer), "--c", str(concurrency), "--requests", str(requests), "--tokens", str(tokens), "--runs",
            str(runs), *(["--stamped"] if stamped else [])]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, cwd=ROOT)
    lines = [ln.removeprefix("RESULT ") for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or len(lines) != runs:
        raise RuntimeError(f"{client} client failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return [figures_of(json.loads(line)) for line in lines]


def compare_throughput(url: str, tokenizer: Path, args: argparse.Namespace) -> bool:
    """Both clients at each ``--concurrency``, in alternating order; prints a row each. True: the target is met."""
    print(f"streamed-token rate against a loopback server streaming as fast as it can ({url}); "
          f"{args.tokens} output tokens per request, {args.requests_per_user} requests per user")
    print("wall: output tok/s as measured; per CPU-s: output tokens per second of the client process's CPU in its "
          "load phase, the rate one free core sustains (the verdict's figure: robust when other work shares the "
          "machine; on an idle machine the two agree)")
    print(f"{'conc':>5} {'runs':>5} {'ours wall':>10} {'vLLM wall':>10} {'ratio':>6}   "
          f"{'ours/CPU-s':>10} {'vLLM/CPU-s':>10} {'ratio':>6}   (medians over runs)")
    met = True
    for concurrency in args.concurrency:
        requests = concurrency * args.requests_per_user
        got: dict[str, list[Figures]] = {"ours": [], "vllm": []}
        for round_ in range(args.rounds):
            for client in (("ours", "vllm") if round_ % 2 == 0 else ("vllm", "ours")):
                got[client] += run_client(client, url, tokenizer, concurrency, requests, args.tokens, args.runs)
        row = throughput(concurrency, got["ours"], got["vllm"])
        print(f"{concurrency:>5} {row.runs:>5} {row.ours_tok_s:>10,.0f} {row.vllm_tok_s:>10,.0f} "
              f"{row.wall_ratio:>6.2f}   {row.ours_per_cpu_s:>10,.0f} {row.vllm_per_cpu_s:>10,.0f} "
              f"{row.cpu_ratio:>6.2f}   (target >= {TARGET_RATIO:g}: {'ok' if row.ok else 'BELOW TARGET'})",
              flush=True)
        met &= concurrency < 256 or row.ok
    return met


def check_timestamps(url: str, tokenizer: Path) -> bool:
    """Stamped chunks' lags of ours at concurrency 1 and both clients under load; True: ours adds less than the
    target over the floor."""
    print(f"timestamping: a chunk's arrival stamp minus the server's send time, chunks every {PACED_ITL_MS:g} ms; "
          "at concurrency 1 this is the machine's own floor (loopback delivery, waking the process), the same for "
          "any client; what load adds above it is the client's")
    lags = {}
    for client, concurrency in (("ours", 1), ("ours", PACED_CONCURRENCY), ("vllm", PACED_CONCURRENCY)):
        paced = run_client(client, url, tokenizer, concurrency, max(8, concurrency * 2), PACED_TOKENS,
                           stamped=True)[0]
        lags[client, concurrency] = lag_quantiles(paced["lags_ms"])
        p50, p99 = lags[client, concurrency]
        print(f"  {client:<5} c={concurrency:<3} p50 {p50:.3f} ms, p99 {p99:.3f} ms over {len(paced['lags_ms'])} "
              "chunks", flush=True)
    added = lags["ours", PACED_CONCURRENCY][1] - lags["ours", 1][1]
    print(f"  ours adds {added:.3f} ms at p99 over the floor at concurrency {PACED_CONCURRENCY} "
          f"(target < {TARGET_ADDED_MS:g} ms: {'ok' if added < TARGET_ADDED_MS else 'ABOVE TARGET'})")
    return added < TARGET_ADDED_MS


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.client_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="*", default=[64, 256],
                        help="none: the timestamping check only")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (ours, vLLM; vLLM, ours; ...)")
    parser.add_argument("--runs", type=int, default=3, help="back-to-back runs per client process and round")
    parser.add_argument("--tokens", type=int, default=256, help="output tokens per request")
    parser.add_argument("--requests-per-user", type=int, default=4)
    parser.add_argument("--worker", choices=["ours", "vllm"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--tokenizer", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--c", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--stamped", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.url, args.tokenizer, args.c, args.requests, args.tokens, args.runs, args.stamped)
        return
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = tokenizer_dir(Path(tmp))
        with loopback(0.0, 0.0) as url:
            met = compare_throughput(url, tokenizer, args)
        with loopback(0.0, PACED_ITL_MS, stamp=True) as url:
            met &= check_timestamps(url, tokenizer)
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
