"""Speculation as the narrative states it: a speculative ship recipe beside its ``off`` twin and its series'
crossover, and each method's line from its lowest concurrency to its highest."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.analysis.speculation_crossover import crossovers
from harness.analysis.speculation_effect import speculation_pairs
from harness.report.narrative_speculation import speculation_defence, speculation_lines
from harness.report.rows import cell_row, pair_rows

from tests.support.speculation_cells import priced_speculation_grid


def test_a_speculative_decision_is_defended_with_its_twin_and_its_crossover(write_matrix: Callable[..., Path],
                                                                            tmp_path: Path) -> None:
    tpot = {("off", c): [10.0] for c in (1, 4, 16)}
    tpot |= {("mtp1", 1): [5.0], ("mtp1", 4): [12.0], ("mtp1", 16): [20.0]}
    tpot |= {("mtp3", 1): [12.0], ("mtp3", 4): [13.0], ("mtp3", 16): [20.0]}
    priced = priced_speculation_grid(write_matrix, tmp_path, tpot)
    pairs = speculation_pairs(priced)
    rows = {r.cell.cell_id: cell_row(r) for r in priced}
    found = crossovers(pairs)
    lines = {line.method: line for line in speculation_lines(pair_rows(pairs, rows), found)}
    assert lines["mtp1"].crossover is not None and lines["mtp1"].crossover.state == "crosses"
    assert lines["mtp3"].crossover is not None and lines["mtp3"].crossover.state == "never pays"
    ship = next(r for r in rows.values() if r.cell.server.speculation.label == "mtp1" and r.cell.concurrency == 4)
    defence = speculation_defence(ship, pair_rows(pairs, rows), found)
    assert defence is not None and defence.pair is not None and defence.pair.tpot_speedup == pytest.approx(10 / 12)
    assert defence.crossover is lines["mtp1"].crossover
    off = next(r for r in rows.values() if r.cell.server.speculation.is_off)
    assert speculation_defence(off, pair_rows(pairs, rows), found) is None
