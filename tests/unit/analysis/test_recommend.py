"""The ship recipe: cheapest measured cell inside the SLO that passes parity; runner-up; why the others lost."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.analysis.cost import DEFAULT_TABLE, price_cells, replica_price
from harness.analysis.frontier import build_series
from harness.analysis.noise import TIE
from harness.analysis.recommend import Judged, PanelRecommendation, recommend, slo_interactivity, slo_misses
from harness.config import Slo, load_matrix
from harness.parity import find_cell_parity
from harness.plan import Plan, expand
from harness.store import Store

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_failed, store_launches, store_ok, store_parity, summary

MATRIX = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [1, 4, 16]") + """\
  precision: [bf16, fp8]
  speculation: [off, {method: mtp, k: 1}]
slo: {ttft_p99_ms: 500, tpot_p50_ms: 25}
"""


def test_slo_rules() -> None:
    s = summary(100.0, tpot_ms=30.0, ttft_ms=400.0)  # TTFT p99 480, TPOT p99 36
    assert slo_misses(s, Slo.model_validate({"ttft_p99_ms": 500, "tpot_p50_ms": 30})) == []
    assert slo_misses(s, Slo.model_validate({"tpot_p50_ms": 25})) == ["TPOT p50 30.0 ms > 25.0 ms"]
    # the per-request bounds are judged at the p99
    assert slo_misses(s, Slo.model_validate({"ttft_ms": 450, "tpot_ms": 40})) == ["TTFT p99 480.0 ms > 450.0 ms"]
    assert slo_interactivity(Slo.model_validate({"tpot_p50_ms": 25})) == 40.0
    assert slo_interactivity(Slo.model_validate({})) is None


def _stored(write_matrix: Callable[..., Path], tmp_path: Path, extra: str = "") -> tuple[Plan, Store]:
    plan = expand(load_matrix(write_matrix(MATRIX + extra)))
    store = Store(tmp_path, plan.matrix.name)
    figures = {  # (precision, speculation, concurrency) -> (output tok/s, median TPOT ms)
        ("bf16", "off", 1): (50.0, 10.0), ("bf16", "off", 4): (150.0, 20.0), ("bf16", "off", 16): (300.0, 40.0),
        ("bf16", "mtp1", 1): (80.0, 8.0), ("bf16", "mtp1", 4): (220.0, 15.0), ("bf16", "mtp1", 16): (500.0, 30.0),
        ("fp8", "off", 1): (60.0, 9.0), ("fp8", "off", 4): (180.0, 18.0), ("fp8", "off", 16): (350.0, 35.0),
        ("fp8", "mtp1", 1): (90.0, 7.0), ("fp8", "mtp1", 4): (260.0, 14.0),
    }
    for cell in plan.cells:
        key = (cell.server.precision.label, cell.server.speculation.label, cell.concurrency)
        if key in figures:
            out, tpot = figures[key]
            store_ok(store, cell, summary(out, tpot))
        else:
            store_failed(store, cell)  # fp8/mtp1 at c16: fastest of all, but failed
    return plan, store


def _label(judged: Judged | None) -> str | None:
    return judged.row.cell.label if judged is not None else None


def _recommend(plan: Plan, store: Store) -> list[PanelRecommendation]:
    rows = price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE))
    parity = {c.cell_id: v for c in plan.cells if (v := find_cell_parity(store.parity_verdict_path(c))) is not None}
    return recommend(rows, plan.matrix, build_series(rows), parity)


def test_cheapest_cell_inside_the_slo_ships(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    (rec,) = _recommend(*_stored(write_matrix, tmp_path))
    assert _label(rec.ship) == "m/vllm/fp8/tp1/mtp1/w/c4"  # c16 cells miss TPOT p50 <= 25 or failed
    assert _label(rec.runner_up) == "m/vllm/bf16/tp1/mtp1/w/c4"  # best of another recipe
    assert rec.runner_up is not None and rec.pct_dearer(rec.runner_up) == pytest.approx((260 / 220 - 1) * 100)
    reasons = {o.series: o.reason for o in rec.outcomes}
    assert set(reasons) == {"vllm/bf16/off", "vllm/bf16/mtp1", "vllm/fp8/off"}
    assert reasons["vllm/fp8/off"] == "its cheapest qualifying cell (c4) costs 44% more per output token than " \
                                      "the ship recipe; noise unknown (one launch each), not a finding"
    # one launch per cell: the margin is a point reading, never a finding
    margin = rec.runner_up_margin
    assert margin is not None and margin.call == "unknown" and margin.interval is None
    assert not rec.parity_checked
    # the frontiers read at the SLO's 40 tok/s/user
    points = dict(rec.operating_points)
    # bf16/off: c16 at 25 tok/s/user (300 tok/s), c4 at 50 (150): 40 lies 60% of the way, 210 tok/s
    assert points["vllm/bf16/off"].tok_s_per_device == pytest.approx(210.0)
    assert points["vllm/bf16/off"].concurrency == (16, 4) and not points["vllm/bf16/off"].measured
    assert "vllm/fp8/mtp1" not in points  # its measured frontier starts at 71 tok/s/user: never extrapolated


def test_parity_gates_the_recommendation(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan, store = _stored(write_matrix, tmp_path, "parity: {max_drop_pp: 1.0}\n")
    (rec,) = _recommend(plan, store)
    # fp8 cells have no parity verdict stored: only the bf16 reference cells qualify
    assert _label(rec.ship) == "m/vllm/bf16/tp1/mtp1/w/c4" and rec.parity_checked
    assert "parity not measured" in {o.series: o.reason for o in rec.outcomes}["vllm/fp8/off"]
    by_label = {c.label: c for c in plan.cells}
    for label, passed in (("m/vllm/fp8/tp1/mtp1/w/c4", False), ("m/vllm/fp8/tp1/off/w/c4", True)):
        store_parity(store, by_label[label], passed=passed, delta_pp=-0.4 if passed else -3.2)
    (rec,) = _recommend(plan, store)
    assert _label(rec.ship) == "m/vllm/bf16/tp1/mtp1/w/c4"  # 220 tok/s beats fp8/off c4's 180
    assert _label(rec.runner_up) == "m/vllm/fp8/tp1/off/w/c4"
    reason = {o.series: o.reason for o in rec.outcomes}["vllm/fp8/mtp1"]
    assert "fails parity (Δ -3.2 pp, limit -1.0 pp)" in reason


def test_another_runtime_at_the_reference_precision_needs_its_own_pass(write_matrix: Callable[..., Path],
                                                                        tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX + """\
  runtime: [vllm, sglang]
slo: {tpot_p50_ms: 25}
parity: {reference_runtime: vllm}
""")))
    store = Store(tmp_path, plan.matrix.name)
    for cell in plan.cells:  # SGLang's serving is the cheaper one
        store_ok(store, cell, summary((200.0 if cell.server.runtime == "sglang" else 100.0) * cell.concurrency, 10.0))
    (rec,) = _recommend(plan, store)
    assert _label(rec.ship) == "m/vllm/bf16/tp1/off/w/c2"  # the reference passes; SGLang's has no verdict yet
    assert "parity not measured" in {o.series: o.reason for o in rec.outcomes}["sglang/bf16/off"]
    for cell in plan.cells:
        if cell.server.runtime == "sglang":
            store_parity(store, cell, passed=True, delta_pp=0.0)
    (rec,) = _recommend(plan, store)
    assert _label(rec.ship) == "m/sglang/bf16/tp1/off/w/c2"


def test_an_inconclusive_pass_does_not_ship_a_cheaper_precision(write_matrix: Callable[..., Path],
                                                                 tmp_path: Path) -> None:
    from harness.parity import ParityRule, cell_parity, compare, write_cell_parity

    from tests.support.bfcl_wire import fake_run

    plan, store = _stored(write_matrix, tmp_path, "parity: {max_drop_pp: 1.0}\n")
    few = fake_run({f"simple_python_{i}": i < 30 for i in range(40)})
    for cell in plan.cells:
        if cell.server.precision.label == "fp8":  # no item lost, on a sample that could not have seen a drop
            weak = compare(few, few, ParityRule(min_power=0.8))
            write_cell_parity(cell_parity({"free": weak}), store.parity_verdict_path(cell))
    (rec,) = _recommend(plan, store)
    assert _label(rec.ship) == "m/vllm/bf16/tp1/mtp1/w/c4"
    reason = {o.series: o.reason for o in rec.outcomes}["vllm/fp8/off"]
    assert "parity inconclusive (free: 1.4% power against a 5-point drop at 40 items)" in reason


def test_nothing_ships_when_nothing_qualifies(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX.replace("tpot_p50_ms: 25", "tpot_p50_ms: 1"))))
    store = Store(tmp_path, plan.matrix.name)
    for cell in plan.cells:
        if cell.server.precision.label == "bf16":
            store_ok(store, cell, summary(100.0, 10.0))
        else:
            store_failed(store, cell, "server failed to start: out of memory")
    (rec,) = _recommend(plan, store)
    assert rec.ship is None and rec.runner_up is None
    reasons = {o.series: o.reason for o in rec.outcomes}
    assert reasons["vllm/fp8/off"] == "no measured cell: 3 failed (server failed to start: out of memory)"
    assert "TPOT p50 10.0 ms > 1.0 ms" in reasons["vllm/bf16/off"]


@pytest.mark.parametrize(("ship", "runner_up", "call"), [
    ([260.0, 265.0, 255.0], [220.0, 224.0, 216.0], "b"),  # the runner-up's tokens cost more on every launch
    ([260.0, 330.0, 200.0], [220.0, 180.0, 270.0], "tie"),  # same medians, launches that overlap
])
def test_runner_up_margin_carries_the_launch_noise(write_matrix: Callable[..., Path], tmp_path: Path,
                                                   ship: list[float], runner_up: list[float], call: str) -> None:
    plan, store = _stored(write_matrix, tmp_path)
    by_label = {c.label: c for c in plan.cells}
    for label, launches in (("m/vllm/fp8/tp1/mtp1/w/c4", ship), ("m/vllm/bf16/tp1/mtp1/w/c4", runner_up)):
        store_launches(store, by_label[label], [summary(v, 14.0) for v in launches])
    (rec,) = _recommend(plan, store)
    assert _label(rec.ship) == "m/vllm/fp8/tp1/mtp1/w/c4" and _label(rec.runner_up) == "m/vllm/bf16/tp1/mtp1/w/c4"
    assert rec.runner_up is not None and rec.pct_dearer(rec.runner_up) == pytest.approx((260 / 220 - 1) * 100)
    margin = rec.runner_up_margin
    assert margin is not None and margin.interval is not None and margin.call == call
    assert margin.launches == (3, 3) and margin.interval.ratio > 1  # $/MTok runner-up over ship
    text = margin.describe("$/MTok")
    expected = text.endswith("outside the launch noise") if call == "b" else text.startswith(TIE)
    assert expected, text
    # a loser with one launch borrows the ship recipe's launch noise: the margin has an interval
    reason = {o.series: o.reason for o in rec.outcomes}["vllm/fp8/off"]
    assert "$/MTok" in reason and "over 3 and 1 launches" in reason
