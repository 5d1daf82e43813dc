"""The report's view of speculation beyond the pairs table: per-request acceptance, crossovers, the best k.

Built from the priced cells and the speculation pairs (``harness.analysis.speculation_effect``), each figure as
the analysis computed it; this module only gathers them into frozen rows and draws the acceptance histograms.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.analysis.cost import PricedCell
from harness.analysis.speculation_crossover import BestK, Crossover, best_k, crossovers
from harness.analysis.speculation_effect import SpeculationPair
from harness.metrics.per_request import RequestAcceptance
from harness.report.plots import png
from harness.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AcceptanceRow:
    """One cell's per-request acceptance lengths, summarised."""

    label: str
    """speculation · concurrency, within its model's panel."""
    concurrency: int
    model: str
    speculative: bool
    source: str
    requests: int
    p10: float
    median: float
    p90: float
    stream_median: float | None
    """The stream-structure figure beside the server's (equal when the source is the stream)."""
    cell_length: float | None
    """The server counters' acceptance length over the whole cell, for comparison."""


@dataclass(frozen=True, slots=True)
class SpeculationView:
    acceptance: tuple[AcceptanceRow, ...]
    """Speculative cells first (by model, speculation, concurrency), then the ``off`` cells' check row."""
    off_check: tuple[float, float] | None
    """Across ``off`` cells, the lowest and highest median tokens per chunk: 1.00 means one chunk per step."""
    histogram_plot: str | None
    crossovers: tuple[Crossover, ...]
    best_k: tuple[BestK, ...]


def _row(cell: PricedCell, acceptance: RequestAcceptance) -> AcceptanceRow:
    server = cell.cell.server
    spec = cell.summary.speculation if cell.summary is not None else None
    return AcceptanceRow(
        label=f"{server.runtime} {server.speculation.label} · c{cell.cell.concurrency}",
        concurrency=cell.cell.concurrency,
        model=server.model_name,
        speculative=not server.speculation.is_off, source=acceptance.source, requests=len(acceptance.lengths),
        p10=acceptance.quantile(0.1), median=acceptance.median, p90=acceptance.quantile(0.9),
        stream_median=acceptance.stream_median, cell_length=spec.acceptance_length if spec is not None else None)


def speculation_view(priced: Sequence[PricedCell], pairs: Sequence[SpeculationPair], store: Store
                     ) -> SpeculationView:
    measured = [(c, a) for c in priced if c.summary is not None and (a := c.summary.acceptance_per_request)]
    rows = sorted((_row(c, a) for c, a in measured),
                  key=lambda r: (not r.speculative, r.model, r.label.split(" · ")[0], r.concurrency))
    speculative = [r for r in rows if r.speculative]
    off = [r.median for r in rows if not r.speculative]
    return SpeculationView(
        acceptance=tuple(speculative), off_check=(min(off), max(off)) if off else None,
        histogram_plot=_histograms([(c, a) for c, a in measured if not c.cell.server.speculation.is_off], store),
        crossovers=tuple(crossovers(pairs)), best_k=tuple(best_k(pairs)))


def _histograms(cells: Sequence[tuple[PricedCell, RequestAcceptance]], store: Store) -> str | None:
    """One panel per speculative recipe, a histogram per concurrency; None when there is nothing to draw."""
    if not cells:
        return None
    recipes: dict[str, list[tuple[PricedCell, RequestAcceptance]]] = {}
    for cell, acceptance in cells:
        s = cell.cell.server
        recipes.setdefault(f"{s.model_name} · {s.precision.label} · {s.speculation.label}", []).append(
            (cell, acceptance))
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"acceptance-{store.dir.name}") + ".png"
    try:
        _draw(recipes, store.plots_dir / name)
    except ImportError:
        log.warning("matplotlib is not installed: acceptance histograms skipped (the table is in the report)")
        return None
    return f"plots/{name}"


def _draw(recipes: dict[str, list[tuple[PricedCell, RequestAcceptance]]], path: Path) -> Path:
    n = len(recipes)
    with png(path, ncols=n, figsize=(3.2 * n + 0.6, 3.2)) as axes:
        axes = [axes] if n == 1 else list(axes)
        for ax, (title, members) in zip(axes, recipes.items(), strict=True):
            top = max(max(a.lengths) for _, a in members)
            bins = [1.0 + i * 0.125 for i in range(int((top - 1.0) / 0.125) + 2)]
            for cell, acceptance in sorted(members, key=lambda m: m[0].cell.concurrency):
                ax.hist(acceptance.lengths, bins=bins, histtype="step", linewidth=1.5,
                        label=f"c{cell.cell.concurrency} (n={len(acceptance.lengths)}, {acceptance.source})")
            ax.set_title(title, fontsize=8)
            ax.set_xlabel("tokens per verify step, per request")
            ax.set_ylabel("requests")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=6, loc="upper right")  # fixed: loc="best" is timed (plots.plot_panel)
    return path
