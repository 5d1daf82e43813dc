"""A judged capstone run to render: six cells of two recipes (off, mtp2) on three launches each, parity asked for,
lock and gate written as before every report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.pipeline import render
from harness.plan import expand
from harness.store import Store

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_launches, summary

CAPSTONE = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [1, 4, 16]") + """\
  speculation: ["off", {method: mtp, k: 2}]
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 8}
slo: {ttft_p99_ms: 500, tpot_p50_ms: 25}
parity: {max_drop_pp: 1.0}
"""
FIGURES = {("off", 1): (800.0, 20.0), ("off", 4): (2400.0, 25.0), ("off", 16): (6400.0, 40.0),
           ("mtp2", 1): (1600.0, 10.0), ("mtp2", 4): (4000.0, 16.0), ("mtp2", 16): (9600.0, 32.0)}
"""Output tok/s and median TPOT per (speculation, concurrency): mtp2 at c4 ships, off at c4 is the runner-up."""
LAUNCHES = (0.98, 1.0, 1.02)


@pytest.fixture
def capstone_report(write_matrix: Callable[..., Path], tmp_path: Path) -> Path:
    """``report.md`` of the capstone run, rendered from disk as ``harness report`` renders it."""
    plan = expand(load_matrix(write_matrix(CAPSTONE)))
    store = Store(tmp_path / "reports", plan.matrix.name, lock_dir=tmp_path / "lock")
    for cell in plan.cells:
        out, tpot = FIGURES[(cell.server.speculation.label, cell.concurrency)]
        rate = None if cell.server.speculation.is_off else 0.7
        store_launches(store, cell, [summary(out * f, tpot, acceptance_rate=rate) for f in LAUNCHES])
    return render(plan, store)
