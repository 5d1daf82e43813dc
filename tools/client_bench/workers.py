"""The clients the benchmark runs in worker processes of their own: ours (the harness's load runner, as a cell runs
it) and ``vllm bench serve``'s driven in-process (only for the timestamping check, which hooks its parser), the
loopback server they are measured against, the tokenizer every client loads, and the instrument that reads how late
a client stamps a chunk the server stamped with its send time.

A worker is ``python -m tools.client_bench --worker NAME ...`` (``run_client``): a fresh process per client, so no
client pays for another's imports or shares its event loop.
"""

from __future__ import annotations

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
from pathlib import Path
from typing import Any, TypedDict

from harness.servers.process import free_port

ROOT = Path(__file__).resolve().parents[2]
INPUT_TOKENS = 32
PACED_ITL_MS = 10.0
PACED_TOKENS = 100


class Figures(TypedDict):
    """One client run: output tok/s (wall and per CPU-second of its load phase), its requests, and per stamped
    chunk how much later the client stamped it than the server sent it."""

    tok_s: float
    tok_per_cpu_s: float
    completed: int
    failed: int
    lags_ms: list[float]


def figures_of(data: dict[str, Any]) -> Figures:
    """A worker's JSON line, checked field by field (a worker of another version fails here, not in a median)."""
    return {"tok_s": float(data["tok_s"]), "tok_per_cpu_s": float(data["tok_per_cpu_s"]),
            "completed": int(data["completed"]), "failed": int(data["failed"]),
            "lags_ms": [float(lag) for lag in data["lags_ms"]]}


def lag_quantiles(lags_ms: Sequence[float]) -> tuple[float, float]:
    """Median and p99 (the nearest rank below) of the stamped chunks' lags."""
    ordered = sorted(lags_ms)
    return statistics.median(ordered), ordered[int(0.99 * (len(ordered) - 1))]


def tokenizer_dir(root: Path) -> Path:
    """A byte-level tokenizer every client can load (ours reads tokenizer.json, the peers use transformers): any
    text encodes and decodes back whole, so a peer that sizes prompts by cutting a corpus to a token count (GuideLLM's
    synthetic text) gets text, not the empty string a word-level vocabulary decodes unknown words to."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tokenizer = Tokenizer(models.BPE(vocab={"</s>": 0, **{c: i + 1 for i, c in enumerate(alphabet)}}, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(["</s>"])
    tokenizer.save(str(root / "tokenizer.json"))
    (root / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "</s>"}))
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
           stamped: bool, result_file: Path | None = None) -> None:
    """``runs`` runs of one client in this (fresh) process, back to back; prints one JSON line per run (and writes
    the last to ``result_file`` when given, as a peer writes its result file)."""
    for _ in range(runs):
        if client == "ours":
            figures = asyncio.run(ours(url, tokenizer, concurrency, requests, tokens, stamped))
        else:
            figures = theirs(url, tokenizer, concurrency, requests, tokens, stamped)
        print("RESULT " + json.dumps(figures), flush=True)
        if result_file is not None:
            result_file.write_text(json.dumps(figures))


def worker_argv(client: str, url: str, tokenizer: Path, concurrency: int, requests: int, tokens: int,
                runs: int = 1, stamped: bool = False, result_file: Path | None = None) -> list[str]:
    """The command that runs ``worker`` in a process of its own (run from the repository root)."""
    return [sys.executable, "-m", "tools.client_bench", "--worker", client, "--url", url, "--tokenizer",
            str(tokenizer), "--c", str(concurrency), "--requests", str(requests), "--tokens", str(tokens), "--runs",
            str(runs), *(["--stamped"] if stamped else []),
            *(["--result-file", str(result_file)] if result_file is not None else [])]


def run_client(client: str, url: str, tokenizer: Path, concurrency: int, requests: int, tokens: int,
               runs: int = 1, stamped: bool = False) -> list[Figures]:
    """Runs of one client in a process of its own (vLLM's import is paid once per process, not per run)."""
    argv = worker_argv(client, url, tokenizer, concurrency, requests, tokens, runs, stamped)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, cwd=ROOT)
    lines = [ln.removeprefix("RESULT ") for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or len(lines) != runs:
        raise RuntimeError(f"{client} client failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return [figures_of(json.loads(line)) for line in lines]


