"""The report's figures, drawn beside it into ``plots/``: one frontier per (model, workload), and speculation's
acceptance and speedup against concurrency. Each returns the path the report links (relative to the report), or
nothing when there is nothing to draw; a missing matplotlib leaves the tables, and the report says so.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from harness.analysis.frontier import Series
from harness.analysis.speculation_effect import SpeculationPair, plot_name
from harness.report.plots import plot_panel, plot_speculation
from harness.store import Store

log = logging.getLogger(__name__)


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
    name = plot_name(store.dir.name)
    try:
        plot_speculation(list(pairs), store.plots_dir / name)
    except ImportError:
        log.warning("matplotlib is not installed: the speculation plot is skipped (the table is in the report)")
        return None
    return f"plots/{name}"
