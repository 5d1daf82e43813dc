"""Client benchmark (``make client-bench``): the ceiling per CPU-second of every load client, ours and each installed
peer's, against one loopback server streaming as fast as it can; then how late each client stamps a chunk.

A loopback OpenAI-compatible server (``harness_testing.loopback``, its own process, on uvloop) streams tokens as fast
as the socket takes them, so the client is the bottleneck by construction. Every client (ours, and each peer of
``harness.crosscheck_peers.PEER_CLIENTS`` installed by ``make peers``: vLLM's ``vllm bench serve``, AIPerf, GuideLLM,
inference-perf) runs in a fresh process of its own at concurrency 16, 64 and 256, interleaved round-robin within each
concurrency. Per client and concurrency: the output tok/s it reports, the CPU-seconds its process and every process
it started burned (``ceiling``), output tokens per CPU-second, gross and net of its startup run, medians over
rounds with their spread. Then the stamping delay: the server paces chunks every 10 ms and stamps each with its
send time (CLOCK_MONOTONIC, shared by all processes); how much later a client stamps the chunk's arrival is read for
ours (the kernel's receive timestamp, SO_TIMESTAMPNS) and vLLM's (hooked at its json.loads, right before its stamp),
at concurrency 1 (the machine's floor) and at each concurrency; the other peers stamp inside their own processes
and keep no per-chunk times that could be matched to the server's stamps, so theirs is n/a. The targets: ours at
least ``TARGET_RATIO`` times vLLM's tokens per CPU-second (net) at concurrency 256, and timestamping that adds less
than ``TARGET_ADDED_MS`` at p99 at concurrency 64; the command exits 1 when either is missed (each is judged only
when its concurrency was measured). The table goes to stdout as markdown and to ``build/client-bench/ceiling.json``.
The results: ``docs/studies/client.md`` and ``docs/studies/peers.md``.

    .venv/bin/python -m tools.client_bench [--clients ours vllm ...] [--concurrency 16 64 256] [--rounds 2]
                                           [--requests-per-user 16] [--out build/client-bench/ceiling.json]

Not part of ``make test``: it is a measurement. Run it on an otherwise idle machine; the server and each client share
its cores.
"""

from tools.client_bench.ceiling import (
    CeilingRow,
    CeilingRun,
    Counted,
    build_rows,
    markdown_table,
    round_order,
    run_counted,
)
from tools.client_bench.cli import TARGET_ADDED_MS, TARGET_RATIO, main
from tools.client_bench.workers import (
    Figures,
    figures_of,
    lag_quantiles,
    loopback,
    ours,
    run_client,
    stamping,
    tokenizer_dir,
)

__all__ = ["build_rows", "CeilingRow", "CeilingRun", "Counted", "Figures", "figures_of", "lag_quantiles", "loopback",
           "main", "markdown_table", "ours", "round_order", "run_client", "run_counted", "stamping", "TARGET_ADDED_MS",
           "TARGET_RATIO", "tokenizer_dir"]
