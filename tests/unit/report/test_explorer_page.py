"""The explorer page: the frontier figure (each recipe's cells and frontier per panel, the earlier runs hidden
until the menu shows one), the latency CDFs, and one self-contained HTML file with plotly.js inlined."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.report.explorer import CellPoint, ExplorerData, RunOverlay
from harness.report.explorer_page import (
    FRONTIER_ID,
    THIS_RUN,
    explorer_html,
    frontier_figure,
    latency_figure,
    write_explorer,
)
from harness.report.latency_cdfs import CellLatency, cdf

POINTS = (
    CellPoint("a", "m/x/w/c1", "m · w", "x", 50.0, 100.0, True, "<b>a</b><br>predicted (p)"),
    CellPoint("b", "m/x/w/c4", "m · w", "x", 40.0, 300.0, True, "b"),
    CellPoint("c", "m/y/w/c1", "m · w", "y", 30.0, 90.0, False, "c"),
    CellPoint("d", "n/x/w/c1", "n · w", "x", 20.0, 50.0, True, "d"),
)
OVERLAYS = (
    RunOverlay("r2", "2026-11-02 09:00 · c0ffee02", (
        dataclasses.replace(POINTS[0], tok_s_per_device=90.0, hover="then"),
        dataclasses.replace(POINTS[3], tok_s_per_device=45.0))),
    RunOverlay("r1", "2026-11-01 09:00 · c0ffee01", (dataclasses.replace(POINTS[1], tok_s_per_device=250.0),)),
)
LATENCY = (CellLatency("a", "m/x/w/c1", "m · w", cdf([30.0, 10.0, 20.0]), cdf([5.0, 6.0])),
           CellLatency("c", "m/y/w/c1", "m · w", cdf([40.0]), cdf([])),
           CellLatency("d", "n/x/w/c1", "n · w", cdf([12.0, 11.0]), cdf([7.0])))


def _data(**changes: object) -> ExplorerData:
    data = ExplorerData(matrix="t", generated_at="2026-11-28T07:00:00+00:00", device_unit="GPU", x_slo=40.0,
                        panels=("m · w", "n · w"), points=POINTS, overlays=OVERLAYS,
                        history="The results history holds 3 run(s) of <t>.", latency=LATENCY)
    return dataclasses.replace(data, **changes)  # type: ignore[arg-type]


def test_each_recipe_has_its_cells_and_its_frontier_line_per_panel() -> None:
    traces = frontier_figure(_data(overlays=())).data
    lines = [t for t in traces if t.mode == "lines"]
    markers = [t for t in traces if t.mode == "markers"]
    assert len(lines) == len(markers) == 3  # (m, x), (m, y), (n, x)
    assert [(list(t.x), list(t.y)) for t in lines] == [([40.0, 50.0], [300.0, 100.0]), ([], []), ([20.0], [50.0])]
    assert [list(t.text) for t in markers] == [["<b>a</b><br>predicted (p)", "b"], ["c"], ["d"]]
    assert all(t.hovertemplate == "%{text}<extra></extra>" for t in markers)
    assert list(markers[0].marker.symbol) == ["circle", "circle"] and list(markers[1].marker.symbol) == ["x"]
    assert [t.showlegend for t in markers] == [True, True, False]  # a recipe is named once
    assert [t.xaxis for t in markers] == ["x", "x", "x2"]  # a subplot per panel


def test_the_menu_overlays_one_earlier_run_at_a_time() -> None:
    figure = frontier_figure(_data())
    overlays = [t for t in figure.data if t.name and t.name.startswith("run ")]
    assert [(t.name, len(t.x), t.visible) for t in overlays] == [
        ("run 2026-11-02 09:00 · c0ffee02", 1, False), ("run 2026-11-01 09:00 · c0ffee01", 1, False),
        ("run 2026-11-02 09:00 · c0ffee02", 1, False)]  # panel m's two runs, then panel n's one
    (menu,) = figure.layout.updatemenus
    assert [b.label for b in menu.buttons] == [THIS_RUN, "with run 2026-11-02 09:00 · c0ffee02",
                                              "with run 2026-11-01 09:00 · c0ffee01"] and menu.active == 0
    shown = [list(b.args[0]["visible"]) for b in menu.buttons]
    is_overlay = [any(t is o for o in overlays) for t in figure.data]
    assert shown[0] == [not o for o in is_overlay]
    newer = [t.name == "run 2026-11-02 09:00 · c0ffee02" for t in figure.data]
    assert shown[1] == [not o or n for o, n in zip(is_overlay, newer, strict=True)]
    assert sum(shown[2]) == sum(shown[0]) + 1


def test_without_an_earlier_run_there_is_no_menu() -> None:
    assert not frontier_figure(_data(overlays=())).layout.updatemenus


def test_each_cells_cdfs_side_by_side() -> None:
    traces = latency_figure(LATENCY[:2]).data
    assert [(t.name, t.xaxis, list(t.x), list(t.y)) for t in traces] == [
        ("m/x/w/c1", "x", [10.0, 20.0, 30.0], [1 / 3, 2 / 3, 1.0]), ("m/x/w/c1", "x2", [5.0, 6.0], [0.5, 1.0]),
        ("m/y/w/c1", "x", [40.0], [1.0])]  # a cell with no TPOT (one-token answers) has no TPOT curve
    assert [t.showlegend for t in traces] == [True, False, True]


def test_the_page_is_one_self_contained_file(tmp_path: Path) -> None:
    page = explorer_html(_data())
    assert page.count("<script") == 1 + 3  # plotly.js inlined once, then each figure's call to it
    assert "<script src" not in page and "<link" not in page and "plotly.js v" in page
    for div in (FRONTIER_ID, "latency-1", "latency-2"):
        assert f'id="{div}"' in page
    assert "<h3>m · w</h3>" in page and "holds 3 run(s) of &lt;t&gt;." in page
    path = write_explorer(_data(), tmp_path / "explorer.html")
    assert path.read_text() == page


def test_a_run_without_figures_says_so() -> None:
    page = explorer_html(_data(points=(), panels=(), overlays=(), latency=()))
    assert 'id="frontier"' not in page and "No measured cell has a frontier point" in page
    assert "No cell has its requests on disk." in page
