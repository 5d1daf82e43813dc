"""One round of a paired check: the reference and the candidate each run the matrix once, back to back, in an order
drawn at random and balanced, each by its own harness in a child process; and what each round left on disk.

Both sides run the same command (``harness run MATRIX --launches 1 --force --history none``) from their own tree,
with that tree's harness first on the path, so neither is favoured by running in-process, and a revision's harness
needs no option newer than itself. The
order is drawn per pair of rounds, one of each order in every pair (Pinpoint's ``_GetABOrderings`` balances its
attempts the same way): however early the check stops, the two orders differ by at most one round, so a machine that
warms up or slows down over a round cannot favour either side.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.errors import HarnessError
from harness.result_records import CellResult
from harness.stored_files import read_stored_text

Side = Literal["reference", "candidate"]
INTERRUPT_GRACE_S = 90.0
"""How long a side's harness gets to stop its server when the check is interrupted before its group is killed."""


def balanced_orders(seed: int, rounds: int) -> tuple[tuple[Side, Side], ...]:
    """Per round, which side runs first: each consecutive pair of rounds holds one of each order, the pair's order
    drawn from ``seed`` (recorded with the verdict, so a check can be replayed in the same order)."""
    draw = random.Random(seed)
    ref_first: tuple[Side, Side] = ("reference", "candidate")
    cand_first: tuple[Side, Side] = ("candidate", "reference")
    orders: list[tuple[Side, Side]] = []
    while len(orders) < rounds:
        pair = [ref_first, cand_first]
        draw.shuffle(pair)
        orders += pair
    return tuple(orders[:rounds])


@dataclass(frozen=True, slots=True)
class SideRun:
    """How one side's harness runs: interpreter, tree, matrix, and environment additions."""

    side: Side
    python: str
    tree: Path
    matrix: Path
    env: dict[str, str]


async def run_side(side: SideRun, out: Path) -> int:
    """Run the side's matrix once into ``out`` (its log beside it); return the harness's exit code. Cancelled, the
    child is stopped as Ctrl-C would stop it (it stops its server), then, past a grace, killed with its group."""
    out.mkdir(parents=True, exist_ok=True)
    argv = [side.python, "-P", "-m", "harness", "run", str(side.matrix), "--out", str(out), "--force",
            "--launches", "1", "--history", "none", "--lock-dir", str(side.tree / "lock")]
    with (out / "harness.log").open("wb") as log:
        child = await asyncio.create_subprocess_exec(*argv, cwd=side.tree, env={**os.environ, **side.env},
                                                     stdout=log, stderr=asyncio.subprocess.STDOUT,
                                                     start_new_session=True)
        try:
            return await child.wait()
        except asyncio.CancelledError:
            await asyncio.shield(_stop(child))
            raise


async def _stop(child: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        # SIGTERM, which the harness handles as Ctrl-C: a SIGINT would be ignored by a child of a shell without job
        # control (`nohup`, `make ... &`), and the group killed after the grace would orphan its server
        os.killpg(child.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(child.wait(), INTERRUPT_GRACE_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        await child.wait()


def read_round(out: Path) -> dict[str, CellResult]:
    """label -> result of every cell one side's run stored under ``out`` (``<matrix>/runs/<cell>/summary.json``).
    Labels, not cell ids, pair the two sides: a revision may compute ids its own way."""
    found: dict[str, CellResult] = {}
    for path in sorted(out.glob("*/runs/*/summary.json")):
        try:
            result = CellResult.model_validate_json(read_stored_text(path) or "")
        except ValueError as exc:
            raise HarnessError(f"{path} does not read as a cell result of this harness ({exc.__class__.__name__}): "
                               "the reference's results format differs; fix: pick a revision closer to this one"
                               ) from exc
        found[result.label] = result
    return found
