"""The report's figures are real PNG files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.analysis.cost import DEFAULT_TABLE, price_cells, replica_price
from harness.analysis.frontier import FrontierPoint, Series, pareto
from harness.analysis.speculation_effect import speculation_pairs
from harness.config import load_matrix
from harness.plan import expand
from harness.report.plots import plot_panel, plot_speculation
from harness.store import Store

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_ok, summary

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def point(x: float, y: float, c: int = 1) -> FrontierPoint:
    return FrontierPoint(label=f"c{c}", concurrency=c, interactivity=x, tok_s_per_device=y, usd_per_device_hour=5.5,
                         watts_per_device=2170.0)


def test_frontier_plot_writes_a_png(tmp_path: Path) -> None:
    points = [point(10, 900, 16), point(40, 500, 4), point(30, 400, 8)]
    panel = [Series("m", "w", "vllm", "bf16", "off", tuple(points), pareto(points)),
             Series("m", "w", "vllm", "bf16", "mtp2", (point(20, 1000, 4),), (point(20, 1000, 4),))]
    path = plot_panel(panel, tmp_path / "plots" / "f.png", title="m · w", device_unit="GPU", slo_interactivity=25.0)
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_frontier_points_carry_their_range_over_launches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib.axes

    drawn: list[Any] = []
    real = matplotlib.axes.Axes.errorbar
    monkeypatch.setattr(matplotlib.axes.Axes, "errorbar",
                        lambda ax, *a, **k: drawn.append(k["yerr"]) or real(ax, *a, **k))
    launched = FrontierPoint(label="c4", concurrency=4, interactivity=40, tok_s_per_device=500, usd_per_device_hour=5.5,
                             watts_per_device=None, launch_tok_s=(480.0, 500.0, 530.0))
    panel = [Series("m", "w", "vllm", "bf16", "off", (launched, point(10, 900, 16)), (point(10, 900, 16), launched))]
    assert plot_panel(panel, tmp_path / "f.png", title="t", device_unit="GPU").read_bytes()[:8] == PNG_MAGIC
    assert drawn == [[[20.0], [30.0]]]  # one point has launches: below and above its median, as measured


def test_speculation_plot_writes_a_png(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX + "  speculation: [off, mtp]\n")))
    store = Store(tmp_path, plan.matrix.name)
    for cell in plan.cells:
        speculative = not cell.server.speculation.is_off
        store_ok(store, cell, summary(100.0 * cell.concurrency * (1.2 if speculative else 1.0), 10.0,
                                      acceptance_rate=0.6 if speculative else None))
    pairs = speculation_pairs(price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE)))
    path = plot_speculation(pairs, tmp_path / "plots" / "spec.png")
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_speculation_plot_without_acceptance_figures_draws_no_empty_legend(write_matrix: Callable[..., Path],
                                                                          tmp_path: Path) -> None:
    # a server that exports no acceptance counters leaves the first panel empty: no legend there, no warning
    plan = expand(load_matrix(write_matrix(BASE_MATRIX + "  speculation: [off, mtp]\n")))
    store = Store(tmp_path, plan.matrix.name)
    for cell in plan.cells:
        store_ok(store, cell, summary(100.0 * cell.concurrency, 10.0))
    pairs = speculation_pairs(price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE)))
    path = plot_speculation(pairs, tmp_path / "plots" / "spec.png")  # warnings are errors in this suite
    assert path.read_bytes()[:8] == PNG_MAGIC
