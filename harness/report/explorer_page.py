"""The explorer page: ``explorer.ExplorerData`` drawn with Plotly into one self-contained ``explorer.html`` beside
the report, which a browser opens from disk with no network (plotly.js is inlined in the page, never fetched).

Two kinds of figure, drawn by Plotly's own means so the page carries no JavaScript of ours:

- the frontiers, a panel per (model · workload): every recipe's cells (filled on its frontier, crosses off it),
  its frontier as a line, the SLO's interactivity as a dashed line; hovering a cell shows its figures and its
  prediction. A menu above them (a Plotly ``updatemenus`` dropdown restyling the traces' visibility) overlays one
  earlier run of the matrix from the results history, as open grey circles;
- the latency distributions, a figure per panel: each cell's TTFT and TPOT CDFs side by side.

Plotly is imported only when a page is written, so no other command pays for importing it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.report.explorer import CellPoint, ExplorerData, RunOverlay
from harness.report.latency_cdfs import CellLatency
from harness.store import write_atomic

FRONTIER_ID = "frontier"
"""The frontier figure's element id (the browser test finds it by it)."""
LATENCY_ID = "latency-{}"
"""The latency figure of the panel numbered so (from 1)."""
THIS_RUN = "this run only"
"""The menu's first entry: no earlier run overlaid."""
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
OVERLAY_COLOR = "#555555"
CONFIG = {"displaylogo": False, "responsive": True}
PANEL_HEIGHT = 380
STYLE = """
body { font-family: "DejaVu Sans", "Helvetica", sans-serif; font-size: 14px; line-height: 1.45; color: #111;
       max-width: 1200px; margin: 0 auto; padding: 12px 20px; }
h1 { font-size: 22px; margin: 8px 0; } h2 { font-size: 18px; margin: 22px 0 6px 0; border-bottom: 1px solid #ccc; }
h3 { font-size: 15px; margin: 14px 0 4px 0; } .meta { color: #555; font-size: 12px; }
"""


def _frontier_traces(data: ExplorerData, go: Any, figure: Any) -> list[str | None]:
    """Add every trace of the frontier figure; returns each trace's run (None: this run's, always shown)."""
    recipes = list(dict.fromkeys(p.recipe for p in data.points))
    colors = {recipe: PALETTE[i % len(PALETTE)] for i, recipe in enumerate(recipes)}
    owners: list[str | None] = []
    legend: set[str] = set()
    for row, panel in enumerate(data.panels, 1):
        for recipe in recipes:
            points = [p for p in data.points if p.panel == panel and p.recipe == recipe]
            if not points:
                continue
            line = sorted((p for p in points if p.on_frontier), key=lambda p: p.interactivity)
            figure.add_trace(go.Scatter(
                x=[p.interactivity for p in line], y=[p.tok_s_per_device for p in line], mode="lines",
                line={"color": colors[recipe]}, hoverinfo="skip", legendgroup=recipe, showlegend=False), row, 1)
            figure.add_trace(go.Scatter(
                x=[p.interactivity for p in points], y=[p.tok_s_per_device for p in points], mode="markers",
                name=recipe, legendgroup=recipe, showlegend=recipe not in legend, text=[p.hover for p in points],
                hovertemplate="%{text}<extra></extra>",
                marker={"color": colors[recipe], "size": 10,
                        "symbol": ["circle" if p.on_frontier else "x" for p in points]}), row, 1)
            owners += [None, None]
            legend.add(recipe)
        for overlay in data.overlays:
            points = [p for p in overlay.points if p.panel == panel]
            if points:
                figure.add_trace(_overlay_trace(go, overlay, points, overlay.run_key not in legend), row, 1)
                owners.append(overlay.run_key)
                legend.add(overlay.run_key)
    return owners


def _overlay_trace(go: Any, overlay: RunOverlay, points: Sequence[CellPoint], named: bool) -> Any:
    return go.Scatter(x=[p.interactivity for p in points], y=[p.tok_s_per_device for p in points], mode="markers",
                      name=f"run {overlay.name}", legendgroup=overlay.run_key, showlegend=named, visible=False,
                      text=[p.hover for p in points], hovertemplate="%{text}<extra></extra>",
                      marker={"color": OVERLAY_COLOR, "size": 11, "symbol": "circle-open", "line": {"width": 2}})


def _run_menu(data: ExplorerData, owners: Sequence[str | None]) -> dict[str, Any]:
    """The dropdown that shows this run alone or with one earlier run overlaid."""
    choices = [(THIS_RUN, None), *((f"with run {o.name}", o.run_key) for o in data.overlays)]
    buttons = [{"label": label, "method": "restyle",
                "args": [{"visible": [owner is None or owner == key for owner in owners]}]} for label, key in choices]
    return {"type": "dropdown", "buttons": buttons, "active": 0, "showactive": True, "x": 1.0, "xanchor": "right",
            "y": 1.0, "yanchor": "bottom", "pad": {"b": 28}}


def frontier_figure(data: ExplorerData) -> Any:
    """Every panel's frontiers with this run's cells, the earlier runs' overlays hidden until the menu shows one."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    figure = make_subplots(rows=len(data.panels), cols=1, subplot_titles=data.panels, vertical_spacing=0.22 /
                           len(data.panels))
    owners = _frontier_traces(data, go, figure)
    if data.x_slo is not None:
        figure.add_vline(x=data.x_slo, line_dash="dash", line_color="grey", annotation_text="SLO (TPOT bound)",
                         annotation_position="top left")
    figure.update_xaxes(title_text="interactivity: tok/s per user (1000 / median TPOT ms)")
    figure.update_yaxes(title_text=f"output tok/s per {data.device_unit}", rangemode="tozero")
    figure.update_layout(template="plotly_white", height=PANEL_HEIGHT * len(data.panels) + 120,
                         margin={"t": 110}, hoverlabel={"align": "left"},
                         updatemenus=[_run_menu(data, owners)] if data.overlays else [])
    return figure


def latency_figure(cells: Sequence[CellLatency]) -> Any:
    """The cells' TTFT and TPOT CDFs side by side, a colour per cell (clicking one in the legend hides both)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    figure = make_subplots(rows=1, cols=2, subplot_titles=("TTFT", "TPOT"), horizontal_spacing=0.08)
    for i, cell in enumerate(cells):
        for column, (name, cdf) in enumerate((("TTFT", cell.ttft), ("TPOT", cell.tpot)), 1):
            if not cdf.values:
                continue
            figure.add_trace(go.Scatter(
                x=cdf.values, y=cdf.fractions, mode="lines+markers", marker={"size": 4},
                line={"shape": "hv", "width": 1.5, "color": PALETTE[i % len(PALETTE)]}, name=cell.label,
                legendgroup=cell.cell_id, showlegend=column == 1,
                text=[f"{html.escape(cell.label)}<br>{name}"] * len(cdf.values),
                hovertemplate="%{text} %{x:.1f} ms<br>%{y:.1%} of " + f"{cdf.requests} requests at or below"
                              "<extra></extra>"), 1, column)
    figure.update_xaxes(title_text="ms")
    figure.update_yaxes(title_text="fraction of requests at or below", range=[0, 1.02])
    figure.update_layout(template="plotly_white", height=PANEL_HEIGHT, margin={"t": 40}, hoverlabel={"align": "left"},
                         legend={"font": {"size": 10}})
    return figure


def _div(figure: Any, div_id: str) -> str:
    import plotly.io as pio

    height = figure.layout.height
    div: str = pio.to_html(figure, include_plotlyjs=False, full_html=False, div_id=div_id, config=CONFIG,
                           default_height=f"{height}px")
    return div


def explorer_html(data: ExplorerData) -> str:
    """The whole page: plotly.js inlined in its head, the frontiers, then each panel's latency distributions."""
    from plotly.offline import get_plotlyjs

    esc = html.escape
    unit = esc(data.device_unit)
    frontier = (_div(frontier_figure(data), FRONTIER_ID) if data.points else
                "<p>No measured cell has a frontier point (none has a TPOT).</p>")
    latency = []
    for n, panel in enumerate(dict.fromkeys(c.panel for c in data.latency), 1):
        cells = [c for c in data.latency if c.panel == panel]
        latency.append(f"<h3>{esc(panel)}</h3>\n{_div(latency_figure(cells), LATENCY_ID.format(n))}")
    body = f"""<h1>Explorer: {esc(data.matrix)}</h1>
<p class="meta">Rendered {esc(data.generated_at)} from the stored run, beside <a href="report.md">report.md</a>;
self-contained (plotly.js inlined): it opens from disk with no network.</p>
<h2>Frontiers</h2>
<p>Output tok/s per {unit} against interactivity (tok/s per user) for every recipe, a panel per model and workload:
filled points are on their recipe's frontier, crosses are beaten by another of its cells. Hover a point for its
figures, its prediction and measured ÷ predicted. {esc(data.history)}</p>
{frontier}
<h2>Latency distributions</h2>
<p>Each measured cell's TTFT and TPOT over its completed requests (records.jsonl, warm-up excluded), as the
fraction of requests at or below each value; click a cell in the legend to hide it.</p>
{chr(10).join(latency) or "<p>No cell has its requests on disk.</p>"}
"""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>Explorer: {esc(data.matrix)}</title>\n<style>{STYLE}</style>\n"
            f'<script type="text/javascript">{get_plotlyjs()}</script>\n</head>\n<body>\n{body}</body>\n</html>\n')


def write_explorer(data: ExplorerData, path: Path) -> Path:
    """Write the page to ``path`` (``reports/<matrix>/explorer.html``: ``Store.explorer_path``)."""
    write_atomic(path, explorer_html(data))
    return path
