"""A stored speculation grid with chosen TPOTs: `off` and MTP at k = 1 and 3, at concurrency 1, 4 and 16."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.analysis.cost import DEFAULT_TABLE, PricedCell, price_cells, replica_price
from harness.config import load_matrix
from harness.plan import expand
from harness.store import Store

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_launches, store_ok, summary

SPECULATION_MATRIX = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [1, 4, 16]") + \
    "  speculation: [off, {method: mtp, k: 1}, {method: mtp, k: 3}]\n"


def priced_speculation_grid(write_matrix: Callable[..., Path], tmp_path: Path,
                            tpot: dict[tuple[str, int], list[float]]) -> list[PricedCell]:
    """Every cell of the grid stored with its TPOT per launch (one value: one launch), keyed by (label, c)."""
    plan = expand(load_matrix(write_matrix(SPECULATION_MATRIX)))
    store = Store(tmp_path, plan.matrix.name)
    for cell in plan.cells:
        values = tpot[(cell.server.speculation.label, cell.concurrency)]
        launches = [summary(1000.0 * cell.concurrency / t, t, acceptance_rate=None if
                            cell.server.speculation.is_off else 0.6) for t in values]
        if len(launches) == 1:
            store_ok(store, cell, launches[0])
        else:
            store_launches(store, cell, launches)
    return price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE))
