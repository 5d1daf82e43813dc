"""Speculation's effect: pairs with the `off` twin, where it stops paying, and the plot against concurrency."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.analysis.cost import DEFAULT_TABLE, price_cells, replica_price
from harness.analysis.speculation_effect import break_even, speculation_pairs
from harness.config import load_matrix
from harness.plan import expand
from harness.store import Store

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_failed, store_ok, summary

MATRIX = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [1, 4, 16]") + \
    "  speculation: [off, {method: mtp, k: 2}, ngram]\n"
# output tok/s: MTP pays at 1 and 4 and not at 16; n-gram never pays; n-gram at 16 failed (no pair)
THROUGHPUT = {("off", 1): 40.0, ("off", 4): 120.0, ("off", 16): 300.0, ("mtp2", 1): 70.0, ("mtp2", 4): 150.0,
              ("mtp2", 16): 240.0, ("ngram3", 1): 38.0, ("ngram3", 4): 100.0}


def rows_for(write_matrix: Callable[..., Path], tmp_path: Path):  # type: ignore[no-untyped-def]
    plan = expand(load_matrix(write_matrix(MATRIX)))
    store = Store(tmp_path, plan.matrix.name)
    for cell in plan.cells:
        key = (cell.server.speculation.label, cell.concurrency)
        if key in THROUGHPUT:
            tpot = 1000.0 * cell.concurrency / THROUGHPUT[key]
            store_ok(store, cell, summary(THROUGHPUT[key], tpot, acceptance_rate=None if key[0] == "off" else 0.5))
        else:
            store_failed(store, cell)
    return price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE))


def test_pairs_and_break_even(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    pairs = speculation_pairs(rows_for(write_matrix, tmp_path))
    got = {(p.speculative.cell.server.speculation.label, p.speculative.cell.concurrency): p for p in pairs}
    assert set(got) == {("mtp2", 1), ("mtp2", 4), ("mtp2", 16), ("ngram3", 1), ("ngram3", 4), ("ngram3", 16)}
    assert got[("mtp2", 1)].throughput_ratio == pytest.approx(70 / 40)
    assert got[("mtp2", 1)].tpot_speedup == pytest.approx(70 / 40)  # TPOT = c x 1000 / tok/s here
    assert got[("ngram3", 16)].throughput_ratio is None  # its run failed: no ratio, not a zero
    ends = {b.series.split(" · ")[4]: b for b in break_even(pairs)}
    assert (ends["mtp2"].paid_up_to, ends["mtp2"].concurrency) == (4, 16)
    assert (ends["ngram3"].paid_up_to, ends["ngram3"].concurrency) == (None, 1)


def test_always_paying_series_has_no_break_even(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    pairs = [p for p in speculation_pairs(rows_for(write_matrix, tmp_path))
             if p.speculative.cell.server.speculation.label == "mtp2" and p.speculative.cell.concurrency < 16]
    (end,) = break_even(pairs)
    assert end.concurrency is None and end.paid_up_to == 4
