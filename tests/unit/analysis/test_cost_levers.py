"""Cost levers: measured on pairs that differ on one axis only, set beside the capstone lecture's claimed ranges."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.analysis.cost import DEFAULT_TABLE, price_cells, replica_price
from harness.analysis.cost_levers import measure_levers
from harness.analysis.noise import TIE
from harness.config import load_matrix
from harness.plan import expand
from harness.store import Store

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_failed, store_launches, store_ok, summary

MATRIX = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [64, 16, 256]") + \
    "  speculation: [off, {method: mtp, k: 2}]\n"


def test_levers_against_lecture_claims(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
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
    assert spec.median_pct == pytest.approx(-43.75) and spec.point_verdict == "agrees"
    # one launch per cell: the median agrees, but that is a point reading
    assert spec.interval_pct is None and spec.call == "unknown" and spec.reading == "noise unknown (one launch each)"
    assert spec.verdict == "noise unknown (one launch each), not a finding (the median alone: agrees)"

    step = levers[("concurrency", "16", "64")]
    assert sorted(step.changes_pct) == pytest.approx([-60.0, -50.0])
    assert step.point_verdict == "agrees"  # median -55% inside the claimed -65..-50%
    high = levers[("concurrency", "64", "256")]
    assert high.changes_pct == pytest.approx((250 / 260 * 100 - 100,))
    assert high.point_verdict == "disagrees: a smaller saving here"
    assert high.verdict == "noise unknown (one launch each), not a finding (the median alone: disagrees: a smaller " \
                           "saving here)"


def test_lever_that_makes_tokens_dearer(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX + "  speculation: [off, ngram]\n")))
    store = Store(tmp_path, plan.matrix.name)
    for cell in plan.cells:
        store_ok(store, cell, summary(100.0 if cell.server.speculation.is_off else 80.0, 20.0))
    rows = price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE))
    (lever,) = [lever for lever in measure_levers(rows, plan.matrix) if lever.axis == "speculation"]
    assert lever.claim is None and lever.verdict == "no claim in the lecture"
    assert lever.median_pct == pytest.approx(25.0)


ONE_PAIR = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [16]") + \
    "  speculation: [off, {method: mtp, k: 2}]\n"


@pytest.mark.parametrize(("off", "mtp", "call", "verdict"), [
    # -50% on every launch, inside the claimed -55..-40%
    ([100.0, 102.0, 98.0], [200.0, 204.0, 196.0], "cheaper", "agrees"),
    # the median (-33%) misses the claim, but the launches spread 1.4-1.75x: a tie, so nothing is refuted
    ([100.0, 140.0, 80.0], [150.0, 190.0, 130.0], "tie",
     "inconclusive: the launch interval reaches outside the claimed range"),
    # 20% dearer on every launch
    ([100.0, 102.0, 98.0], [80.0, 81.0, 79.0], "dearer", "disagrees: it made tokens dearer here"),
])
def test_lever_verdict_comes_from_the_launches(write_matrix: Callable[..., Path], tmp_path: Path, off: list[float],
                                               mtp: list[float], call: str, verdict: str) -> None:
    plan = expand(load_matrix(write_matrix(ONE_PAIR)))
    store = Store(tmp_path, plan.matrix.name)
    for cell in plan.cells:
        launches = off if cell.server.speculation.is_off else mtp
        store_launches(store, cell, [summary(v, 20.0) for v in launches])
    rows = price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE))
    (lever,) = measure_levers(rows, plan.matrix)
    assert lever.claim is not None and lever.claim.text == "MTP / EAGLE"
    assert lever.call == call and lever.verdict == verdict
    assert lever.interval_pct is not None
    low, high = lever.interval_pct
    assert low < lever.median_pct < high
    if call == "tie":
        assert lever.point_verdict == "disagrees: a smaller saving here" and lever.reading == TIE


def test_pairs_that_disagree_are_no_lead(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(ONE_PAIR.replace("concurrency: [16]", "concurrency: [16, 64]"))))
    store = Store(tmp_path, plan.matrix.name)
    figures = {("off", 16): [100.0, 102.0, 98.0], ("mtp2", 16): [200.0, 204.0, 196.0],  # clearly cheaper
               ("off", 64): [100.0, 140.0, 80.0], ("mtp2", 64): [150.0, 190.0, 130.0]}  # inside the noise
    for cell in plan.cells:
        launches = figures[(cell.server.speculation.label, cell.concurrency)]
        store_launches(store, cell, [summary(v, 20.0) for v in launches])
    rows = price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE))
    (lever,) = [lever for lever in measure_levers(rows, plan.matrix) if lever.axis == "speculation"]
    assert [m.call for m in lever.margins] == ["a", "tie"]
    assert lever.call == "mixed" and lever.reading == "inconclusive: the pairs disagree"
