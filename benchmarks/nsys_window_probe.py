"""Does nsys end its window? Repeated CPU captures of the default's nsys cell, each a launch of its own.

The default's Qwen3 bf16 cell at concurrency 4 is captured ``--captures`` times exactly as ``harness run`` captures
it (``harness.pipeline.launch._nsys_profiles``: the server under ``nsys profile --delay D --duration W``, a warm-up,
then the cell's load through the window), with the measured launch's readiness given as ``--ready`` seconds and the
window's earliest opening as ``--floor``; each line says whether nsys ended the window or hung, and how many CPU
samples it recorded. Results go under ``--out`` (one store per capture).

    .venv/bin/python benchmarks/nsys_window_probe.py --captures 3 --ready 80 --floor 80   # window at 93 s
    .venv/bin/python benchmarks/nsys_window_probe.py --captures 1 --ready 80 --floor 110  # window at 110 s

Seen on a 2-core AMD EPYC VM with AVX2 (2026-11-26, nsys 2022.4): windows opening 93-97 s after launch hung in 5 of 5
captures, at 109-110 s none of 3 did (docs/cpu-engine.md), hence ``profile.nsys_delay_floor_s``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from harness.config import load_matrix
from harness.pipeline.launch import _nsys_profiles
from harness.plan import expand
from harness.servers.registry import get_runtime
from harness.store import Store

CELL = "tiny-qwen3-moe/vllm/bf16/tp1/off/random-128x64/c4"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matrix", type=Path, default=Path("matrices/default.yaml"))
    parser.add_argument("--captures", type=int, default=3)
    parser.add_argument("--ready", type=float, default=80.0, help="the measured launch's readiness, seconds")
    parser.add_argument("--floor", type=int, default=110, help="profile.nsys_delay_floor_s for the probe")
    parser.add_argument("--out", type=Path, default=Path("/tmp/nsys-window-probe"))
    args = parser.parse_args()
    matrix = load_matrix(args.matrix)
    assert matrix.profile is not None, f"{args.matrix} has no profile section"
    matrix = matrix.model_copy(update={"profile": matrix.profile.model_copy(
        update={"nsys_delay_floor_s": args.floor})})
    cell = next(c for c in expand(matrix).cells if c.label == CELL)
    for i in range(args.captures):
        store = Store(args.out / str(i) / "reports", matrix.name)
        started = time.time()
        asyncio.run(_nsys_profiles([cell], matrix, store, get_runtime(cell.server.runtime), args.ready))
        summary = store.profile_dir(cell) / "summary.json"
        capture = json.loads(summary.read_text()).get("nsys_cpu") or {} if summary.is_file() else {}
        run = capture.get("run", {})
        print(f"capture {i}: {round(time.time() - started)} s, window at {run.get('window', {}).get('delay_s')} s, "
              f"{run.get('outcome', {}).get('status')}, hung {run.get('hung')}, {capture.get('samples')} CPU samples",
              flush=True)


if __name__ == "__main__":
    main()
