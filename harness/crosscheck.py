"""Fidelity cross-check: our client and a peer's (``vllm bench serve`` by default) against the same running server,
interleaved.

Both clients drive the same server with the same workload shape (random prompts of the same input and output
lengths and range ratio, ``ignore_eos``, temperature 0), the same seed and the same concurrency, in alternating
rounds (ours first in even rounds, the peer's first in odd ones) so that drift in the server or the machine hits both
alike. Every round sends prompts of its own (ours from a fresh prompt block, the peer's from a fresh seed), so no
round is served from the prefix cache of another. The peer runs in a subprocess, as its entry in
``harness.crosscheck_peers`` builds the command (vLLM's client as ``vllm.benchmarks.serve`` under the server's
interpreter; AIPerf, GuideLLM and inference-perf from their own environments under ``build/peers/``, ``make peers``);
its result file is read back by the same entry.

Printed: per round and client, median TTFT, median TPOT, mean ITL and output throughput, then the ratios ours /
the peer's of the medians over rounds. The server's own histograms are read around every run, so each client is also
compared with what the server recorded while that client drove it: mean ITL and mean TTFT of the client / of the
server, per round. On a machine where the server's speed drifts between rounds (a 2-core VM: 0.86-1.24x of the
median, ``docs/studies/client/server_drift.py``), those anchored ratios tell the clients apart where the raw ratios
only show the drift. With vLLM's client the definitions match (TPOT excludes the first token, ITL pools gaps between
chunks, output tokens come from ``usage``); the remaining differences, each peer's, are its entry's ``notes``. This
module runs the clients and picks the cell; the figures they hand back, their ratios, the stored file and the
printed table are ``harness.crosscheck_result``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from harness.config import RandomWorkload
from harness.crosscheck_peers import peer_client
from harness.crosscheck_result import PEERS_DIR, ClientFigures, CrosscheckResult, CrosscheckSpec
from harness.errors import ConfigError, HarnessError
from harness.fixtures import build_fixtures_async
from harness.load import PROMPT_BLOCK, LoadSpec, run_load
from harness.metrics import summarize
from harness.plan import Cell, Plan
from harness.servers import (
    ServerProcess,
    fixture_names,
    free_port,
    get_runtime,
    launch_spec,
    resolve_model_path,
    scrape,
    server_delta,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


class CrosscheckError(HarnessError):
    """The peer's benchmark client failed or wrote no result."""


async def run_ours(spec: CrosscheckSpec, round_: int, *, warmup: bool = False) -> ClientFigures:
    load = LoadSpec(base_url=spec.base_url, model=spec.model, workload=spec.workload, concurrency=spec.concurrency,
                    tokenizer_dir=spec.tokenizer_dir, request_timeout_s=spec.request_timeout_s,
                    prompt_offset=(2 * round_ + 1) * PROMPT_BLOCK, warmup=warmup, progress=False)
    result = await run_load(load)
    s = summarize(result.records, result.duration_s)
    return ClientFigures(
        client="ours", round=round_, median_ttft_ms=s.ttft_ms.median if s.ttft_ms else float("nan"),
        median_tpot_ms=s.tpot_ms.median if s.tpot_ms else float("nan"),
        mean_itl_ms=s.itl_ms.mean if s.itl_ms else float("nan"), output_throughput=s.output_throughput,
        completed=s.completed, failed=s.failed, mean_ttft_ms=s.ttft_ms.mean if s.ttft_ms else float("nan"),
        mean_tpot_ms=s.tpot_ms.mean if s.tpot_ms else float("nan"))


async def run_peer(spec: CrosscheckSpec, round_: int) -> ClientFigures:
    """One round of the peer client named by ``spec.client``, in a directory of its own, its result read back."""
    peer = peer_client(spec.client)
    with tempfile.TemporaryDirectory(prefix="crosscheck-") as tmp:
        argv = peer.argv(spec, round_, Path(tmp))
        # a group of its own: its worker processes (AIPerf's services, GuideLLM's and inference-perf's workers) are
        # stopped with it, whether the round ends, fails or is cancelled; its output goes to a file, so the round
        # ends when the peer does, not when every process holding a pipe of it has
        log = Path(tmp) / "client.log"
        with log.open("wb") as sink:
            proc = await asyncio.create_subprocess_exec(*argv, stdout=sink, stderr=asyncio.subprocess.STDOUT,
                                                        start_new_session=True)
        try:
            await proc.wait()
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            if proc.returncode is None:
                await asyncio.shield(proc.wait())
        output = log.read_bytes()
        result_file = Path(tmp) / peer.result_file
        if proc.returncode != 0 or not result_file.is_file():
            tail = output.decode(errors="replace")[-2000:]
            raise CrosscheckError(f"{peer.title}'s client ({argv[0]}) exited {proc.returncode} without a result "
                                  f"({peer.result_file}):\n{tail}")
        return peer.figures(result_file, round_)


async def observed(spec: CrosscheckSpec, run: Callable[[CrosscheckSpec, int], Awaitable[ClientFigures]],
                   round_: int) -> ClientFigures:
    """One client run, with the means the server's own histograms recorded over it."""
    if spec.server_metrics is None:
        return await run(spec, round_)
    before = await scrape(spec.base_url)
    figures = await run(spec, round_)
    if (seen := server_delta(before, await scrape(spec.base_url), spec.server_metrics)) is None:
        return figures
    return replace(figures, server_mean_ttft_ms=seen.ttft_ms.mean if seen.ttft_ms else None,
                   server_mean_itl_ms=seen.itl_ms.mean if seen.itl_ms else None,
                   server_mean_tpot_ms=seen.tpot_ms.mean if seen.tpot_ms else None)


async def crosscheck(spec: CrosscheckSpec) -> CrosscheckResult:
    """One unmeasured warm-up of ours, then ``rounds`` interleaved rounds of both clients."""
    if spec.rounds < 1:
        raise ValueError("at least one round")
    peer = peer_client(spec.client)
    peer.check_installed(spec.peers_dir)
    await run_ours(spec, spec.rounds, warmup=True)  # round index past the measured ones: prompts of its own
    rounds: list[ClientFigures] = []
    for round_ in range(spec.rounds):
        order = (run_ours, run_peer) if round_ % 2 == 0 else (run_peer, run_ours)
        for run in order:
            figures = await observed(spec, run, round_)
            log.info("crosscheck round %d: %s", round_, figures)
            rounds.append(figures)
    return CrosscheckResult(spec=spec, rounds=tuple(rounds), title=peer.title, notes=peer.notes)


def pick_cell(plan: Plan, *, server: str | None = None, workload: str | None = None,
              concurrency: int | None = None, num_requests: int | None = None, source: str = "matrix") -> Cell:
    """The matrix cell to cross-check: the first on a server whose label contains ``server``, with a ``random``
    workload (the one named, or the first); ``concurrency`` and ``num_requests`` override the cell's own."""
    for cell in plan.cells:
        if server is not None and server not in cell.server.label:
            continue
        if (workload is not None and cell.workload_name != workload) or not isinstance(cell.workload, RandomWorkload):
            continue
        update: dict[str, object] = {}
        if concurrency is not None:
            update["concurrency"] = concurrency
        if num_requests is not None:
            update["workload"] = cell.workload.model_copy(update={"num_requests": num_requests})
        return cell.model_copy(update=update)
    raise ConfigError(source, "workloads", "no cell matches: a cross-check needs a random workload (every peer "
                      "client has one)" + (f" on a server labelled *{server}*" if server else ""),
                      "pick --server/--workload among the cells `harness plan` lists")


async def crosscheck_cell(cell: Cell, *, base_url: str | None, rounds: int, log_dir: Path,
                          client: str = "vllm") -> CrosscheckResult:
    """Cross-check on one matrix cell against the peer ``client``: against ``base_url`` if given, else on a server
    launched for the cell (and reaped after it), exactly as ``harness run`` would launch it. A peer that is not
    installed is refused before any server is launched."""
    return await drive_cell(cell, base_url=base_url, rounds=rounds, log_dir=log_dir, drive=crosscheck, client=client)


async def drive_cell(cell: Cell, *, base_url: str | None, rounds: int, log_dir: Path,
                     drive: Callable[[CrosscheckSpec], Awaitable[T]], client: str = "vllm") -> T:
    """Run ``drive`` against ``base_url``, or against a server launched for the cell and reaped after it
    (the cross-check; ``docs/studies/client/server_drift.py`` passes rounds of our client alone)."""
    # an unknown or uninstalled peer is refused before a fixture is built or a server launched
    peer_client(client).check_installed(PEERS_DIR)
    server = cell.server
    await build_fixtures_async(fixture_names(server))
    runtime = get_runtime(server.runtime)
    model_path = resolve_model_path(server)
    if not Path(model_path).is_dir():
        raise ConfigError("matrix", f"models.{server.model_name}", "the cross-check needs the model's tokenizer on "
                          "disk", "use a local model directory or a fixture model")
    if not isinstance(cell.workload, RandomWorkload):
        raise ConfigError("matrix", f"workloads.{cell.workload_name}", "a cross-check needs a random workload "
                          "(every peer client has one)", "pick --workload among the random workloads")
    spec = CrosscheckSpec(base_url=base_url or "", model=runtime.served_model_name(server),
                          tokenizer_dir=Path(model_path), workload=cell.workload,
                          concurrency=cell.concurrency, rounds=rounds,
                          request_timeout_s=server.settings.request_timeout_s,
                          vllm_python=server.runtime_env.python or sys.executable,
                          server_metrics=runtime.server_metrics, client=client)
    if base_url is not None:
        return await drive(spec)
    port = free_port(server.settings.host)
    srv = ServerProcess(launch_spec(server, port), server.settings.host, port,
                        log_dir / "server.log", server.settings.startup_timeout_s)
    async with srv:
        return await drive(replace(spec, base_url=srv.base_url))
