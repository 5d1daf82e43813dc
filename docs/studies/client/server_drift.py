"""How much does one server's speed drift between rounds of the same load? Our client alone, round after round.

The cross-check (``harness crosscheck``) compares two clients in interleaved rounds; its raw ratios can only be as
steady as the server is from one round to the next. This measures that: one server launched for a cell of the
matrix, exactly as ``harness run`` launches it, then ``--rounds`` identical rounds of our client (fresh prompts
each, so no round is served from another's prefix cache), each read beside the server's own histograms. If the
server's own ITL mean moves as much as the client's, the drift is the server's, and no client ratio can be tighter.

    .venv/bin/python docs/studies/client/server_drift.py [matrices/default.yaml] [--rounds 8]

Seen on a 2-core VM (2026-11-22, the default's first cell, DeepSeek-V3 fixture at concurrency 1): the mean ITL of 8
identical rounds moved from 0.86x to 1.24x of its median, the server's own histogram with it (docs/studies/client.md).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from pathlib import Path

from harness.config.matrix import load_matrix
from harness.crosscheck import drive_cell, observed, pick_cell, run_ours
from harness.crosscheck_result import ClientFigures, CrosscheckSpec
from harness.plan.expand import expand


async def rounds_of_ours(spec: CrosscheckSpec) -> list[ClientFigures]:
    await run_ours(spec, spec.rounds, warmup=True)
    return [await observed(spec, run_ours, round_) for round_ in range(spec.rounds)]


def spread(values: list[float]) -> str:
    mid = statistics.median(values)
    return f"median {mid:.3f}, range {min(values) / mid:.2f}-{max(values) / mid:.2f}x of it"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("matrix", nargs="?", default="matrices/default.yaml", type=Path)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    cell = pick_cell(expand(load_matrix(args.matrix)))
    log_dir = Path("reports") / "server-drift"
    figures = asyncio.run(drive_cell(cell, base_url=None, rounds=args.rounds, log_dir=log_dir, drive=rounds_of_ours))
    print(f"cell: {cell.label}; {args.rounds} rounds of our client alone on one server")
    print(f"{'round':>5} {'TPOT med ms':>12} {'ITL mean ms':>12} {'server ITL mean':>16} {'client/server':>14}")
    for f in figures:
        server = f"{f.server_mean_itl_ms:16.3f}" if f.server_mean_itl_ms else f"{'-':>16}"
        ratio = f.anchored("mean_itl_ms")
        print(f"{f.round:>5} {f.median_tpot_ms:12.3f} {f.mean_itl_ms:12.3f} {server} "
              f"{(f'{ratio:.3f}' if ratio else '-'):>14}")
    print("client ITL mean:", spread([f.mean_itl_ms for f in figures]))
    if all(f.server_mean_itl_ms for f in figures):
        print("server ITL mean:", spread([f.server_mean_itl_ms for f in figures]))  # type: ignore[misc]
        print("client / server:", spread([f.anchored("mean_itl_ms") for f in figures]))  # type: ignore[misc]


if __name__ == "__main__":
    main()
