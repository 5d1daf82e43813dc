"""Frontiers: Pareto points, interpolation at matched interactivity, comparisons and the PNG."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.analysis.cost import DEFAULT_TABLE, price_cells, replica_price
from harness.analysis.frontier import FrontierPoint, Series, at_interactivity, build_series, compare_matched, pareto
from harness.config import load_matrix
from harness.plan import Plan, expand
from harness.store import Store

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_failed, store_launches, store_ok, summary

SPEC_MATRIX = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [1, 4, 16]") + \
    "  speculation: [off, {method: mtp, k: 2}]\nhardware: {kind: gpu, gpu: B200, gpus_per_replica: 8}\n"


def point(x: float, y: float, c: int = 1) -> FrontierPoint:
    return FrontierPoint(label=f"c{c}", concurrency=c, interactivity=x, tok_s_per_device=y, usd_per_device_hour=5.5,
                         watts_per_device=2170.0)


def series(points: list[FrontierPoint], spec: str = "off") -> Series:
    return Series("m", "w", "vllm", "bf16", spec, tuple(points), pareto(points))


def test_pareto_keeps_points_nothing_beats() -> None:
    a, b, c, dominated = point(10, 900, 16), point(40, 500, 4), point(80, 100, 1), point(30, 400, 8)
    assert pareto([b, dominated, c, a]) == (a, b, c)
    assert pareto([point(10, 100), point(10, 200)]) == (point(10, 200),)


def test_interpolation_is_linear_and_never_extrapolates() -> None:
    s = series([point(10, 900, 16), point(40, 500, 4), point(80, 100, 1)])
    mid = at_interactivity(s, 25)
    assert mid is not None and mid.tok_s_per_device == pytest.approx(700) and mid.concurrency == (16, 4)
    assert not mid.measured
    assert mid.usd_per_mtok == pytest.approx(5.5 * 1e6 / (3600 * 700))
    assert mid.tok_s_per_mw == pytest.approx(700 / 2170 * 1e6)
    exact = at_interactivity(s, 40)
    assert exact is not None and exact.measured and exact.tok_s_per_device == 500
    assert at_interactivity(s, 5) is None and at_interactivity(s, 81) is None
    single = series([point(30, 300)])
    assert at_interactivity(single, 30) is not None and at_interactivity(single, 31) is None


def _plan_with(write_matrix: Callable[..., Path], tmp_path: Path,
               figures: dict[str, tuple[float, float]]) -> tuple[list[Series], Plan]:
    plan = expand(load_matrix(write_matrix(SPEC_MATRIX)))
    store = Store(tmp_path, plan.matrix.name)
    for cell in plan.cells:
        key = f"{cell.server.speculation.label}/c{cell.concurrency}"
        if key in figures:
            out, tpot = figures[key]
            store_ok(store, cell, summary(out, tpot))
        else:
            store_failed(store, cell)
    rows = price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE))
    return build_series(rows), plan


def test_matched_comparison_in_the_inferencex_form(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    # off: 8 GPUs; per GPU 100 -> 300 -> 800 tok/s at 50 -> 40 -> 25 tok/s/user. mtp2 is faster at every point.
    figures = {"off/c1": (800.0, 20.0), "off/c4": (2400.0, 25.0), "off/c16": (6400.0, 40.0),
               "mtp2/c1": (1600.0, 10.0), "mtp2/c4": (4000.0, 16.0), "mtp2/c16": (9600.0, 32.0)}
    all_series, plan = _plan_with(write_matrix, tmp_path, figures)
    comparisons = compare_matched(all_series, plan.matrix, slo_interactivity=40.0)
    assert {c.baseline.speculation for c in comparisons} == {"off"}  # the first value on the axis is the baseline
    at_slo = next(c for c in comparisons if c.interactivity == 40.0)
    # mtp2 at 40 tok/s/user: between (31.25, 1200) and (62.5, 500) -> 1004 tok/s/GPU; off measured at c4: 300
    assert at_slo.challenger_point is not None and at_slo.baseline_point is not None
    assert at_slo.baseline_point.measured and at_slo.baseline_point.tok_s_per_device == pytest.approx(300)
    assert at_slo.challenger_point.tok_s_per_device == pytest.approx(1200 - (40 - 31.25) / 31.25 * 700)
    expected = (1 - 300 / at_slo.challenger_point.tok_s_per_device) * 100
    assert at_slo.cheaper_pct == pytest.approx(expected)
    assert at_slo.more_throughput_pct == pytest.approx((at_slo.challenger_point.tok_s_per_device / 300 - 1) * 100)
    # overlap of off [25, 50] and mtp2 [31.25, 100]: both ends, and the SLO's point in place of the middle (40.6)
    assert [c.interactivity for c in comparisons] == pytest.approx([31.25, 40.0, 50.0])
    # one launch per cell: 3.3x apart, and still no interval to call it with
    assert at_slo.margin is not None and at_slo.margin.call == "unknown"
    assert at_slo.margin.describe("$/MTok") == "noise unknown (one launch each), not a finding"


def test_interpolated_points_keep_their_launches() -> None:
    a = dataclasses.replace(point(10, 900, 16), launch_tok_s=(800.0, 900.0, 1000.0))
    b = dataclasses.replace(point(40, 500, 4), launch_tok_s=(400.0, 500.0, 600.0))
    mid = at_interactivity(series([a, b]), 25)
    assert mid is not None and mid.launch_tok_s == pytest.approx((600.0, 700.0, 800.0))  # launch by launch
    # cells on different numbers of launches: the nearer cell's launches, scaled to the point
    uneven = dataclasses.replace(b, launch_tok_s=(500.0,))
    near_a = at_interactivity(series([a, uneven]), 15)
    assert near_a is not None and near_a.tok_s_per_device == pytest.approx(900 - 400 / 6)
    assert near_a.launch_tok_s == pytest.approx(tuple(v * near_a.tok_s_per_device / 900 for v in (800, 900, 1000)))


@pytest.mark.parametrize(("off", "mtp2", "ratio", "call"), [
    ((0.98, 1.0, 1.02), (0.98, 1.0, 1.02), 2.0, "a"),  # twice the throughput on every launch: half the cost
    ((0.75, 1.0, 1.25), (1.25, 1.0, 0.75), 1.05, "tie"),  # 5% ahead inside a 1.7x launch spread
])
def test_matched_comparison_carries_the_launch_noise(write_matrix: Callable[..., Path], tmp_path: Path,
                                                     off: tuple[float, ...], mtp2: tuple[float, ...], ratio: float,
                                                     call: str) -> None:
    plan = expand(load_matrix(write_matrix(SPEC_MATRIX)))
    store = Store(tmp_path, plan.matrix.name)
    figures = {1: (800.0, 20.0), 4: (2400.0, 25.0), 16: (6400.0, 40.0)}  # both recipes at the same TPOTs
    for cell in plan.cells:
        out, tpot = figures[cell.concurrency]
        factors, scale = (off, 1.0) if cell.server.speculation.is_off else (mtp2, ratio)
        store_launches(store, cell, [summary(out * scale * f, tpot) for f in factors])
    rows = price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE))
    comparisons = compare_matched(build_series(rows), plan.matrix, slo_interactivity=40.0)
    assert comparisons
    for comparison in comparisons:
        margin, throughput = comparison.margin, comparison.throughput_margin
        assert margin is not None and margin.interval is not None and throughput is not None
        assert margin.call == call and margin.interval.ratio == pytest.approx(1 / ratio, rel=1e-6)
        assert throughput.call == {"a": "b", "tie": "tie"}[call]  # more tok/s is fewer $ per token
        assert margin.launches == (3, 3)


def test_failed_cells_are_not_points_and_disjoint_frontiers_say_so(write_matrix: Callable[..., Path],
                                                                   tmp_path: Path) -> None:
    figures = {"off/c1": (800.0, 100.0), "off/c4": (2400.0, 200.0), "mtp2/c1": (1600.0, 10.0)}
    all_series, plan = _plan_with(write_matrix, tmp_path, figures)
    off = next(s for s in all_series if s.speculation == "off")
    assert [p.concurrency for p in off.points] == [1, 4]  # c16 failed: not a point
    comparisons = compare_matched(all_series, plan.matrix)
    assert len(comparisons) == 1 and comparisons[0].interactivity is None and comparisons[0].cheaper_pct is None
