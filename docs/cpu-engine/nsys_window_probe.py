"""Does nsys end its window? Repeated CPU captures of the default's nsys cell, each a launch of its own.

The default's Qwen3 bf16 cell at concurrency 4 is captured ``--captures`` times the way ``harness run`` captures it
(the profile stage's ``ProfileStage.nsys``: the server under ``nsys profile --delay D --duration W``, a warm-up,
then the cell's load through the window), with the measured launch's readiness given as ``--ready`` seconds and the
window's earliest opening as ``--floor``; each line says whether nsys ended the window or hung, and how many CPU
samples it recorded. Results go under ``--out`` (one store per capture).

    .venv/bin/python docs/cpu-engine/nsys_window_probe.py --captures 3 --ready 80 --floor 80   # window at 93 s
    .venv/bin/python docs/cpu-engine/nsys_window_probe.py --captures 1 --ready 80 --floor 110  # window at 110 s

Seen on a 2-core AMD EPYC VM with AVX2 (2026-11-26, nsys 2022.4): windows opening 93-97 s after launch hung in 5 of 5
captures, at 109-110 s none of 3 did (docs/cpu-engine.md), hence ``profile.nsys_delay_floor_s``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from harness.config import Matrix, load_matrix
from harness.load import LoadSpec, run_load
from harness.pipeline.launch import prompt_offset, tokenizer_dir
from harness.plan import Cell, expand
from harness.profiling import ProfiledServer, ProfileStage
from harness.servers.process import free_port
from harness.servers.runtime_lookup import get_runtime, launch_spec
from harness.store import Store

CELL = "tiny-qwen3-moe/vllm/bf16/tp1/off/random-128x64/c4"


async def capture(cell: Cell, matrix: Matrix, store: Store, ready_s: float) -> None:
    """One nsys capture of ``cell`` in a launch of its own, stored in ``store`` as ``harness run`` stores it."""
    if matrix.profile is None:
        raise SystemExit(f"matrix {matrix.name} has no profile section")
    runtime = get_runtime(cell.server.runtime)
    host = cell.server.settings.host
    port = free_port(host)
    server = ProfiledServer(launch_spec(cell.server, port), host, port, cell.server.runtime)
    workload = cell.workload.model_copy(update={"num_requests": matrix.profile.requests, "warmup_requests": 0})

    # The load of a window as the pipeline sends it (harness.pipeline.launch keeps its own copy private): the
    # cell's requests at its concurrency for as long as the window lasts, prompts past the measured load's.
    async def window_load(seconds: float) -> None:
        await run_load(LoadSpec(
            base_url=f"http://{host}:{port}", model=runtime.served_model_name(cell.server), workload=workload,
            concurrency=cell.concurrency, tokenizer_dir=tokenizer_dir(cell.server),
            request_timeout_s=cell.server.settings.request_timeout_s,
            pattern=cell.load.model_copy(update={"duration_s": seconds}),
            prompt_offset=prompt_offset(cell, cell.repeats), warmup=False, progress=False, label=cell.label))

    await ProfileStage(matrix.profile, store).nsys(cell, server, window_load, ready_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matrix", type=Path, default=Path("matrices/default.yaml"))
    parser.add_argument("--captures", type=int, default=3)
    parser.add_argument("--ready", type=float, default=80.0, help="the measured launch's readiness, seconds")
    parser.add_argument("--floor", type=int, default=110, help="profile.nsys_delay_floor_s for the probe")
    parser.add_argument("--out", type=Path, default=Path("/tmp/nsys-window-probe"))
    args = parser.parse_args()
    matrix = load_matrix(args.matrix)
    if matrix.profile is None:
        raise SystemExit(f"{args.matrix} has no profile section")
    matrix = matrix.model_copy(update={"profile": matrix.profile.model_copy(
        update={"nsys_delay_floor_s": args.floor})})
    cell = next(c for c in expand(matrix).cells if c.label == CELL)
    for i in range(args.captures):
        store = Store(args.out / str(i) / "reports", matrix.name)
        started = time.time()
        asyncio.run(capture(cell, matrix, store, args.ready))
        summary = store.profile_dir(cell) / "summary.json"
        found = json.loads(summary.read_text()).get("nsys_cpu") if summary.is_file() else None
        nsys = found or {}
        run = nsys.get("run", {})
        print(f"capture {i}: {round(time.time() - started)} s, window at {run.get('window', {}).get('delay_s')} s, "
              f"{run.get('outcome', {}).get('status')}, hung {run.get('hung')}, {nsys.get('samples')} CPU samples",
              flush=True)


if __name__ == "__main__":
    main()
