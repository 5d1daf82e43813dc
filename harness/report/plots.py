"""The report's figures, drawn headless into ``plots/`` beside it: one frontier per (model, workload), and
speculation's acceptance and speedup against concurrency, with the matplotlib set-up and tear-down they share. The
``*_plots``/``*_plot`` entry points return the path the report links (relative to it), or nothing when there is
nothing to draw; a missing matplotlib leaves the tables, and the report says so.

matplotlib is imported only when a figure is drawn, with the Agg backend (reports are rendered on servers and in
CI, with no display); a missing matplotlib raises ImportError, which callers turn into "tables only".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.analysis.frontier import Series
from harness.analysis.speculation_effect import SpeculationPair, by_series
from harness.store import Store

log = logging.getLogger(__name__)


@contextmanager
def png(path: Path, *, ncols: int = 1, nrows: int = 1, figsize: tuple[float, float] = (7.5, 4.8),
        height_ratios: Sequence[float] | None = None) -> Iterator[Any]:
    """Yield the axes of a new figure (one, or an array of ``nrows`` × ``ncols``, squeezed); on exit lay it out and
    save it to ``path``. The figure is closed however the block ends."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=figsize, dpi=110,
                             gridspec_kw={"height_ratios": list(height_ratios)} if height_ratios else None)
    try:
        yield axes
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)


def plot_panel(series: Sequence[Series], path: Path, *, title: str, device_unit: str,
               slo_interactivity: float | None = None) -> Path:
    """Draw every point and frontier of one panel to a PNG; a point measured on several launches carries the range
    of its throughput over them as an error bar."""
    with png(path) as ax:
        for one in series:
            xs = [p.interactivity for p in one.frontier]
            ys = [p.tok_s_per_device for p in one.frontier]
            (line,) = ax.plot(xs, ys, marker="o", label=one.name)
            ranged = [p for p in one.points if len(p.launch_tok_s) > 1]
            if ranged:
                ax.errorbar([p.interactivity for p in ranged], [p.tok_s_per_device for p in ranged],
                            yerr=[[max(0.0, p.tok_s_per_device - min(p.launch_tok_s)) for p in ranged],
                                  [max(0.0, max(p.launch_tok_s) - p.tok_s_per_device) for p in ranged]],
                            fmt="none", ecolor=line.get_color(), elinewidth=1, capsize=3)
            others = [p for p in one.points if p not in one.frontier]
            ax.scatter([p.interactivity for p in others], [p.tok_s_per_device for p in others],
                       color=line.get_color(), alpha=0.35, marker="x")
            for p in one.frontier:
                ax.annotate(f"c{p.concurrency}", (p.interactivity, p.tok_s_per_device), fontsize=7,
                            xytext=(3, 3), textcoords="offset points")
        if slo_interactivity is not None:
            ax.axvline(slo_interactivity, color="grey", linestyle="--", linewidth=1, label="SLO (TPOT bound)")
        ax.set_xlabel("interactivity (tok/s/user = 1000 / median TPOT ms)"
                      + ("; bars: range over launches" if any(len(p.launch_tok_s) > 1 for s in series
                                                              for p in s.points) else ""))
        ax.set_ylabel(f"output tok/s per {device_unit}")
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        # a fixed corner: loc="best" searches for one against wall time and warns when the search took over a
        # second, which a loaded machine turns into a warning per report (and a failed test under -W error)
        ax.legend(fontsize=8, loc="upper right")
    return path


def plot_speculation(pairs: Sequence[SpeculationPair], path: Path) -> Path:
    """Acceptance rate, TPOT speedup and throughput ratio against concurrency, one line per series."""
    panels = (("acceptance_rate", "acceptance rate (server counters)"),
              ("tpot_speedup", "TPOT speedup vs off (×)"), ("throughput_ratio", "output tok/s vs off (×)"))
    with png(path, ncols=len(panels), figsize=(12, 4)) as axes:
        for ax, (metric, title) in zip(axes, panels, strict=True):
            for name, group in by_series(pairs).items():
                points = [(p.speculative.cell.concurrency, v) for p in group if (v := getattr(p, metric)) is not None]
                if points:
                    ax.plot(*zip(*points, strict=True), marker="o", label=name)
            if metric != "acceptance_rate":
                ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("concurrency")
            ax.set_title(title, fontsize=9)
            ax.grid(True, alpha=0.3)
        # a legend only where a series was drawn (no acceptance figure anywhere leaves the first panel empty)
        labelled = next((ax for ax in axes if ax.get_legend_handles_labels()[0]), None)
        if labelled is not None:
            labelled.legend(fontsize=6, loc="lower left")  # fixed: see plot_panel
    return path


def frontier_plots(series: Sequence[Series], store: Store, device_unit: str, x_slo: float | None
                   ) -> dict[tuple[str, str], str]:
    """One frontier PNG per (model, workload), by panel; empty when matplotlib is not installed."""
    panels = list(dict.fromkeys(s.panel for s in series))
    drawn: dict[tuple[str, str], str] = {}
    for model, workload in panels:
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"frontier-{model}-{workload}") + ".png"
        try:
            plot_panel([s for s in series if s.panel == (model, workload)], store.plots_dir / name,
                       title=f"{model} · {workload}", device_unit=device_unit, slo_interactivity=x_slo)
        except ImportError:
            log.warning("matplotlib is not installed: frontier plots skipped (tables are in the report)")
            return {}
        drawn[(model, workload)] = f"plots/{name}"
    return drawn


def _has_a_curve(pairs: Sequence[SpeculationPair]) -> bool:
    """Whether some series was measured at two concurrencies or more (one point is no curve)."""
    concurrencies: dict[str, set[int]] = {}
    for pair in pairs:
        concurrencies.setdefault(pair.series, set()).add(pair.speculative.cell.concurrency)
    return any(len(found) > 1 for found in concurrencies.values())


def speculation_plot(pairs: Sequence[SpeculationPair], store: Store) -> str | None:
    """Acceptance and speedup against concurrency; None when no series has two concurrencies to draw."""
    if not _has_a_curve(pairs):
        return None
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"speculation-{store.dir.name}") + ".png"
    try:
        plot_speculation(list(pairs), store.plots_dir / name)
    except ImportError:
        log.warning("matplotlib is not installed: the speculation plot is skipped (the table is in the report)")
        return None
    return f"plots/{name}"
