"""Client benchmark: the streamed-token rate our client sustains, next to ``vllm bench serve``'s, same server.

A loopback OpenAI-compatible server (``harness.servers.loopback``, its own process, on uvloop) streams tokens as fast
as the socket takes them, so the client is the bottleneck by construction. Each client runs in a fresh process of
its own against it, at concurrency 64 and 256, in alternating order; the ratio ours / vLLM's of output tokens per
second is measured in the same run. Then the timestamping check: the server paces chunks every 10 ms and stamps
each with its send time (CLOCK_MONOTONIC, shared by both processes); how much later our client stamps the
chunk's arrival, at concurrency 64 above the floor the same measure shows at concurrency 1 (loopback delivery and
waking a sleeping process, the machine's share), is what client-side timestamping adds. Ours reads the kernel's
receive timestamp (SO_TIMESTAMPNS), so a burst of chunks queued behind each other in the client is still stamped
when each arrived; vLLM's client stamps after parsing each chunk.
Targets (issue 3): ratio >= 1.5 at concurrency 256, timestamping adds < 0.5 ms at p99.

    .venv/bin/python benchmarks/client_bench.py [--concurrency 64 256] [--rounds 2] [--runs 3] [--tokens 256]

Not part of ``make test``: it is a measurement, run by ``make client-bench``. Run it on an otherwise idle machine;
the server and both clients share its cores.
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
from pathlib import Path

INPUT_TOKENS = 32
PACED_ITL_MS = 10.0
PACED_CONCURRENCY = 64
PACED_TOKENS = 100


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tokenizer_dir(root: Path) -> Path:
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


def _serve(ttft_ms: float, itl_ms: float, *, stamp: bool = False) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "harness.servers.loopback", "--port", str(port), "--uvloop",
                             "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms), *(["--stamp"] if stamp else [])])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}"
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the loopback server did not start")


def _record_lags(lags: list[float]) -> None:
    """Instrument the client (this benchmark only): for chunks the server stamped with ``sent_at``, keep how much
    later the client stamped their arrival. The stamp itself is taken before this runs (on the read)."""
    from harness.load.openai_stream import StreamState

    feed = StreamState.feed

    def stamped_feed(self: StreamState, data: bytes, at: float) -> bool:
        mark = data.find(b'"sent_at":')
        if mark >= 0:
            lags.append((at - float(data[mark + 10:data.index(b"}", mark)])) * 1000.0)
        return feed(self, data, at)

    StreamState.feed = stamped_feed  # type: ignore[method-assign]


async def _ours(url: str, tokenizer: Path, concurrency: int, requests: int, tokens: int,
                stamped: bool = False) -> dict[str, object]:
    from harness.config.workloads import RandomWorkload
    from harness.load.runner import LoadSpec, run_load
    from harness.metrics.summary import summarize

    lags: list[float] = []
    if stamped:  # never in the throughput runs: the instrument costs CPU
        _record_lags(lags)
    workload = RandomWorkload(input_tokens=INPUT_TOKENS, output_tokens=tokens, num_requests=requests,
                              warmup_requests=0)
    result = await run_load(LoadSpec(base_url=url, model="loopback", workload=workload, concurrency=concurrency,
                                     tokenizer_dir=tokenizer, progress=False))
    summary = summarize(result.records, result.duration_s)
    assert result.client is not None
    return {"tok_s": summary.output_throughput, "tok_per_cpu_s": summary.total_output_tokens / result.client.cpu_s,
            "completed": summary.completed, "failed": summary.failed, "lags_ms": lags}


def _theirs(url: str, tokenizer: Path, concurrency: int, requests: int, tokens: int,
            stamped: bool = False) -> dict[str, object]:
    import types

    import vllm.benchmarks.lib.endpoint_request_func as request_funcs
    import vllm.benchmarks.serve as serve
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    lags: list[float] = []
    if stamped:
        # vLLM's client stamps a chunk right after json.loads of it: the end of that call is its stamp.
        def loads(text: str) -> object:
            event = json.loads(text)
            if isinstance(event, dict) and "sent_at" in event:
                lags.append((time.perf_counter() - event["sent_at"]) * 1000.0)
            return event

        request_funcs.json = types.SimpleNamespace(  # type: ignore[assignment]
            loads=loads, dumps=json.dumps, JSONDecodeError=json.JSONDecodeError)

    cpu: list[float] = []
    measured = serve.benchmark

    async def timed(*args: object, **kwargs: object) -> object:  # CPU over its load phase only, as for ours
        start = time.process_time()
        try:
            return await measured(*args, **kwargs)
        finally:
            cpu.append(time.process_time() - start)

    serve.benchmark = timed  # type: ignore[assignment]
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    with tempfile.TemporaryDirectory() as tmp:
        main(parser.parse_args([
            "--backend", "openai", "--base-url", url, "--model", "loopback", "--tokenizer", str(tokenizer),
            "--dataset-name", "random", "--random-input-len", str(INPUT_TOKENS), "--random-output-len", str(tokens),
            "--num-prompts", str(requests), "--max-concurrency", str(concurrency), "--request-rate", "inf",
            "--ignore-eos", "--num-warmups", "0", "--ready-check-timeout-sec", "0", "--disable-tqdm",
            "--save-result", "--result-dir", tmp, "--result-filename", "r.json"]))
        data = json.loads((Path(tmp) / "r.json").read_text())
    return {"tok_s": data["output_throughput"], "tok_per_cpu_s": data["total_output_tokens"] / cpu[0],
            "completed": data["completed"], "failed": data["failed"], "lags_ms": lags}


def _worker(args: argparse.Namespace) -> None:
    """``--runs`` runs of one client in this (fresh) process, back to back; prints one JSON line per run."""
    tokenizer = Path(args.tokenizer)
    for _ in range(args.runs):
        if args.worker == "ours":
            figures = asyncio.run(_ours(args.url, tokenizer, args.c, args.requests, args.tokens, args.stamped))
        else:
            figures = _theirs(args.url, tokenizer, args.c, args.requests, args.tokens, args.stamped)
        print("RESULT " + json.dumps(figures), flush=True)


def _run_client(client: str, url: str, tokenizer: Path, concurrency: int, requests: int, tokens: int,
                runs: int = 1, stamped: bool = False) -> list[dict]:
    """Runs of one client in a process of its own (vLLM's import is paid once per process, not per run)."""
    argv = [sys.executable, __file__, "--worker", client, "--url", url, "--tokenizer", str(tokenizer),
            "--c", str(concurrency), "--requests", str(requests), "--tokens", str(tokens), "--runs", str(runs),
            *(["--stamped"] if stamped else [])]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    lines = [ln.removeprefix("RESULT ") for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or len(lines) != runs:
        raise RuntimeError(f"{client} client failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return [json.loads(line) for line in lines]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="*", default=[64, 256],
                        help="none: the timestamping check only")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (ours, vLLM; vLLM, ours; ...)")
    parser.add_argument("--runs", type=int, default=3, help="back-to-back runs per client process and round")
    parser.add_argument("--tokens", type=int, default=256, help="output tokens per request")
    parser.add_argument("--requests-per-user", type=int, default=4)
    parser.add_argument("--worker", choices=["ours", "vllm"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--tokenizer", help=argparse.SUPPRESS)
    parser.add_argument("--c", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--stamped", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = _tokenizer_dir(Path(tmp))
        server, url = _serve(0.0, 0.0)
        failed = False
        try:
            print(f"streamed-token rate against a loopback server streaming as fast as it can ({url}); "
                  f"{args.tokens} output tokens per request, {args.requests_per_user} requests per user")
            print("wall: output tok/s as measured; per CPU-s: output tokens per second of the client process's CPU "
                  "in its load phase, the rate one free core sustains (the verdict's figure: robust when other work "
                  "shares the machine; on an idle machine the two agree)")
            print(f"{'conc':>5} {'runs':>5} {'ours wall':>10} {'vLLM wall':>10} {'ratio':>6}   "
                  f"{'ours/CPU-s':>10} {'vLLM/CPU-s':>10} {'ratio':>6}   (medians over runs)")
            for concurrency in args.concurrency:
                requests = concurrency * args.requests_per_user
                got: dict[str, list[dict]] = {"ours": [], "vllm": []}
                for round_ in range(args.rounds):
                    for client in (("ours", "vllm") if round_ % 2 == 0 else ("vllm", "ours")):
                        got[client] += _run_client(client, url, tokenizer, concurrency, requests, args.tokens,
                                                   args.runs)
                med = {(c, k): statistics.median(run[k] for run in got[c]) for c in got
                       for k in ("tok_s", "tok_per_cpu_s")}
                wall = med["ours", "tok_s"] / med["vllm", "tok_s"]
                cpu = med["ours", "tok_per_cpu_s"] / med["vllm", "tok_per_cpu_s"]
                # The verdict reads the CPU-normalised ratio: on a shared machine a client's wall rate measures the
                # share of a core the scheduler gave it; on an idle one the two agree.
                verdict = "ok" if cpu >= 1.5 else "BELOW TARGET"
                print(f"{concurrency:>5} {len(got['ours']):>5} {med['ours', 'tok_s']:>10,.0f} "
                      f"{med['vllm', 'tok_s']:>10,.0f} {wall:>6.2f}   {med['ours', 'tok_per_cpu_s']:>10,.0f} "
                      f"{med['vllm', 'tok_per_cpu_s']:>10,.0f} {cpu:>6.2f}   (target >= 1.5: {verdict})", flush=True)
                failed |= concurrency >= 256 and cpu < 1.5
        finally:
            server.terminate()
            server.wait(timeout=10)
        server, url = _serve(0.0, PACED_ITL_MS, stamp=True)
        try:
            print(f"timestamping: a chunk's arrival stamp minus the server's send time, chunks every "
                  f"{PACED_ITL_MS:g} ms; at concurrency 1 this is the machine's own floor (loopback delivery, "
                  "waking the process), the same for any client; what load adds above it is the client's")
            lags = {}
            for client, concurrency in (("ours", 1), ("ours", PACED_CONCURRENCY), ("vllm", PACED_CONCURRENCY)):
                paced = _run_client(client, url, tokenizer, concurrency, max(8, concurrency * 2), PACED_TOKENS,
                                    stamped=True)[0]
                ordered = sorted(paced["lags_ms"])
                lags[client, concurrency] = (statistics.median(ordered), ordered[int(0.99 * (len(ordered) - 1))])
                print(f"  {client:<5} c={concurrency:<3} p50 {lags[client, concurrency][0]:.3f} ms, "
                      f"p99 {lags[client, concurrency][1]:.3f} ms over {len(ordered)} chunks", flush=True)
            added = lags["ours", PACED_CONCURRENCY][1] - lags["ours", 1][1]
            verdict = "ok" if added < 0.5 else "ABOVE TARGET"
            print(f"  ours adds {added:.3f} ms at p99 over the floor at concurrency {PACED_CONCURRENCY} "
                  f"(target < 0.5 ms: {verdict})")
            failed |= added >= 0.5
        finally:
            server.terminate()
            server.wait(timeout=10)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
