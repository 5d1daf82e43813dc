"""The narrative's two figures: what each recipe's tokens cost inside the SLO, and what each lever bought beside the
capstone lecture's claimed range. Each carries its interval where the cells ran on several launches; with one
launch there is none to draw, and the caption in the template says so.

Drawn with the frontier figures' matplotlib set-up (``harness.report.plots.png``); a missing matplotlib leaves the
narrative's tables, as it does the appendices'.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from harness.analysis.cost_levers import Lever
from harness.report.plots import png
from harness.store import Store

log = logging.getLogger(__name__)

COST_FIGURE = "narrative-cost.png"
LEVER_FIGURE = "narrative-levers.png"
_ROLE_COLOUR = {"ship": "#1f77b4", "runner-up": "#ff7f0e", "other": "#b0b0b0"}


@dataclass(frozen=True, slots=True)
class CostBar:
    """One recipe's cheapest cell inside the SLO, as a bar."""

    label: str
    usd_per_mtok: float
    interval: tuple[float, float] | None
    """Its $/MTok at the 95% bootstrap interval of its median throughput over launches; None with one launch."""
    role: str
    """``ship``, ``runner-up`` or ``other``."""


def cost_figure(panels: Sequence[tuple[str, Sequence[CostBar]]], store: Store, device_unit: str) -> str | None:
    """One horizontal bar chart per model and workload, stacked, cheapest on top; None when nothing is inside the
    SLO."""
    drawn = [(title, bars) for title, bars in panels if bars]
    if not drawn:
        return None
    heights = [len(bars) + 1.3 for _, bars in drawn]
    try:
        with png(store.plots_dir / COST_FIGURE, nrows=len(drawn), figsize=(7.2, 0.45 + 0.19 * sum(heights)),
                 height_ratios=heights) as axes:
            for ax, (title, bars) in zip(axes if len(drawn) > 1 else [axes], drawn, strict=True):
                ys = list(range(len(bars)))[::-1]
                errors = [[b.usd_per_mtok - b.interval[0] if b.interval else 0.0 for b in bars],
                          [b.interval[1] - b.usd_per_mtok if b.interval else 0.0 for b in bars]]
                ax.barh(ys, [b.usd_per_mtok for b in bars], height=0.6, color=[_ROLE_COLOUR[b.role] for b in bars],
                        xerr=errors if any(b.interval for b in bars) else None, capsize=2, error_kw={"elinewidth": 1})
                ax.set_yticks(ys, [f"{b.label} ({b.role})" if b.role != "other" else b.label for b in bars],
                              fontsize=7)
                ax.set_ylim(-0.6, len(bars) - 0.4)
                ax.set_title(title, fontsize=8, loc="left")
                ax.tick_params(axis="x", labelsize=7)
                ax.grid(True, axis="x", alpha=0.3)
            (axes[-1] if len(drawn) > 1 else axes).set_xlabel(
                f"$/MTok of output (the {device_unit}'s price is an input)", fontsize=7)
    except ImportError:
        log.warning("matplotlib is not installed: the narrative's cost figure is skipped")
        return None
    return f"plots/{COST_FIGURE}"


def lever_figure(levers: Sequence[Lever], store: Store) -> str | None:
    """Each lever's median change in $/MTok, the range over its pairs and its launch interval, beside the
    capstone lecture's claimed range where it makes one; None when no lever was measured."""
    if not levers:
        return None
    try:
        with png(store.plots_dir / LEVER_FIGURE, figsize=(7.2, 0.7 + 0.22 * len(levers))) as ax:
            labelled = False
            for y, lever in zip(range(len(levers) - 1, -1, -1), levers, strict=True):
                if lever.claim is not None:
                    ax.fill_betweenx([y - 0.35, y + 0.35], lever.claim.lo_pct, lever.claim.hi_pct, color="#2ca02c",
                                     alpha=0.2, label=None if labelled else "lecture's claim (an input)")
                    labelled = True
                ax.hlines(y, lever.lo_pct, lever.hi_pct, color="#555555", linewidth=1)
                if (bounds := lever.interval_pct) is not None:
                    ax.hlines(y, *bounds, color="#1f77b4", linewidth=5, alpha=0.45)
                ax.plot([lever.median_pct], [y], "o", color="#1f77b4")
            ax.axvline(0, color="grey", linewidth=1)
            ax.set_yticks(range(len(levers) - 1, -1, -1),
                          [f"{lever.axis}: {lever.before} → {lever.after}" for lever in levers], fontsize=7)
            ax.set_xlabel("change in $/MTok of output, % (negative: cheaper)", fontsize=7)
            ax.tick_params(axis="x", labelsize=7)
            ax.grid(True, axis="x", alpha=0.3)
            if any(lever.claim for lever in levers):
                ax.legend(fontsize=7, loc="lower right")
    except ImportError:
        log.warning("matplotlib is not installed: the narrative's lever figure is skipped")
        return None
    return f"plots/{LEVER_FIGURE}"
