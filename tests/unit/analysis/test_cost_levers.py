"""Cost levers: measured on pairs that differ on one axis only, set beside the seed's claimed ranges."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.analysis.cost import DEFAULT_TABLE, price_cells, replica_price
from harness.analysis.cost_levers import measure_levers
from harness.config.matrix import load_matrix
from harness.plan.expand import expand
from harness.store import Store

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_failed, store_ok, summary

MATRIX = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [64, 16, 256]") + \
    "  speculation: [off, {method: mtp, k: 2}]\n"


def test_levers_against_seed_claims(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    store = Store(tmp_path, plan.matrix.name)
    throughput = {("off", 16): 100.0, ("off", 64): 250.0, ("off", 256): 260.0,
                  ("mtp2", 16): 200.0, ("mtp2", 64): 400.0}
    for cell in plan.cells:
        key = (cell.server.speculation.label, cell.concurrency)
        if key in throughput:
            store_ok(store, cell, summary(throughput[key], 20.0))
        else:
            store_failed(store, cell)  # mtp2 at 256: no pair for that step
    rows = price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE))
    levers = {(lever.axis, lever.before, lever.after): lever for lever in measure_levers(rows, plan.matrix)}
    assert set(levers) == {("speculation", "off", "mtp2"), ("concurrency", "16", "64"), ("concurrency", "64", "256")}

    spec = levers[("speculation", "off", "mtp2")]
    assert sorted(spec.changes_pct) == pytest.approx([-50.0, -37.5])  # at c16 and c64; c256 has no mtp2 twin
    assert spec.claim is not None and spec.claim.text == "MTP / EAGLE"
    assert spec.median_pct == pytest.approx(-43.75) and spec.verdict == "agrees"

    step = levers[("concurrency", "16", "64")]
    assert sorted(step.changes_pct) == pytest.approx([-60.0, -50.0])
    assert step.verdict == "agrees"  # median -55% inside the claimed -65..-50%
    high = levers[("concurrency", "64", "256")]
    assert high.changes_pct == pytest.approx((250 / 260 * 100 - 100,))
    assert high.verdict == "disagrees: a smaller saving here"


def test_lever_that_makes_tokens_dearer(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX + "  speculation: [off, ngram]\n")))
    store = Store(tmp_path, plan.matrix.name)
    for cell in plan.cells:
        store_ok(store, cell, summary(100.0 if cell.server.speculation.is_off else 80.0, 20.0))
    rows = price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE))
    (lever,) = [lever for lever in measure_levers(rows, plan.matrix) if lever.axis == "speculation"]
    assert lever.claim is None and lever.verdict == "no seed claim" and lever.median_pct == pytest.approx(25.0)
