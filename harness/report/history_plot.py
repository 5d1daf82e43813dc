"""The gate section's trend figure: each gated figure whose history stepped at the newest runs, run by run, with
the launch range of each run, the change points Apache Otava found, and the machine-speed probe beside it."""

from __future__ import annotations

import logging
import re

from harness.report.plots import png
from harness.store import Store
from harness.verdict import HistoryState

log = logging.getLogger(__name__)

PANELS = 6
"""Figures drawn at most (the steps largest first); the table lists them all."""


def trend_plot(state: HistoryState | None, store: Store) -> str | None:
    """Draw the changed trends; the path the report links, or None when nothing changed (or no matplotlib)."""
    if state is None or not state.changed:
        return None
    trends = sorted(state.changed, key=lambda t: -abs(t.step.change_pct) if t.step else 0.0)[:PANELS]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"history-{store.dir.name}") + ".png"
    path = store.plots_dir / name
    try:
        with png(path, nrows=len(trends), figsize=(7.5, 2.4 * len(trends))) as axes:
            for ax, trend in zip(axes if len(trends) > 1 else [axes], trends, strict=True):
                points = trend.series.points
                runs = list(range(1, len(points) + 1))
                centers = [p.center for p in points]
                below = [c - p.low for c, p in zip(centers, points, strict=True)]
                above = [p.high - c for c, p in zip(centers, points, strict=True)]
                ax.errorbar(runs, centers, yerr=[below, above], fmt="o-", color="C0", capsize=3,
                            label=trend.series.metric)
                for change in trend.changes:
                    ax.axvline(change.index + 0.5, color="C3", linestyle="--", linewidth=1)
                ax.set_title(f"{trend.series.label}: {trend.series.metric} ({trend.verdict})", fontsize=8)
                ax.set_xlabel("run (oldest to newest)", fontsize=8)
                probes = [p.run.machine_s for p in points]
                if all(s is not None for s in probes):
                    twin = ax.twinx()
                    twin.plot(runs, probes, "s:", color="0.6", markersize=3)
                    twin.set_ylabel("probe s", fontsize=7, color="0.5")
    except ImportError:
        log.warning("matplotlib is not installed: the history's trend figure is skipped (the table is in the report)")
        return None
    return f"plots/{name}"
