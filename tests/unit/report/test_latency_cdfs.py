"""The explorer's latency distributions: an empirical CDF per cell and figure, monotone, thinned without inventing a
point, over the cell's completed measured requests only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.report.latency_cdfs import MAX_POINTS, cdf, cell_latency, latencies

from tests.support.explored_run import (
    EXPLORED_MATRIX,
    FIGURES,
    OUTPUT_TOKENS,
    REQUESTS,
    TTFT_SCALE,
    explored_run,
    key,
    ttft_ms,
)


def _monotone(values: tuple[float, ...]) -> bool:
    return all(a <= b for a, b in zip(values, values[1:], strict=False))


def test_a_cdf_is_its_sorted_values_at_their_ranks() -> None:
    found = cdf([30.0, 10.0, 20.0, 20.0])
    assert found.values == (10.0, 20.0, 20.0, 30.0)
    assert found.fractions == (0.25, 0.5, 0.75, 1.0) and found.requests == 4


@pytest.mark.parametrize("n", [1, MAX_POINTS, MAX_POINTS + 1, 5_000])
def test_a_thinned_cdf_keeps_both_ends_and_stays_monotone(n: int) -> None:
    values = [((i * 7919) % n) * 0.5 for i in range(n)]
    found = cdf(values)
    assert len(found.values) == min(n, MAX_POINTS) == len(found.fractions) and found.requests == n
    assert found.values[0] == min(values) and found.values[-1] == max(values) and found.fractions[-1] == 1.0
    assert _monotone(found.values) and _monotone(found.fractions)
    assert set(found.values) <= set(values)  # every point is a request's own value


def test_an_empty_cdf_has_no_point() -> None:
    assert cdf([]) == cdf([], 10) and not cdf([]).values and cdf([]).requests == 0


def test_a_cells_cdfs_are_its_completed_measured_requests(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan, store = explored_run(write_matrix(EXPLORED_MATRIX), tmp_path, history="none")
    cell = plan.cells[0]
    found = cell_latency(store, cell)
    assert found is not None and found.label == cell.label and found.panel == "m · w"
    # the warm-up (TTFT 5 s) and the failure are left out
    assert found.ttft.requests == found.tpot.requests == REQUESTS
    assert list(found.ttft.values) == pytest.approx(sorted(ttft_ms(i) * TTFT_SCALE[key(cell)] for i in range(REQUESTS)))
    tpot = FIGURES[key(cell)][1]
    assert list(found.tpot.values) == pytest.approx([tpot + i / 10 for i in range(REQUESTS)])
    assert _monotone(found.ttft.values) and _monotone(found.tpot.fractions) and OUTPUT_TOKENS > 1


def test_a_cell_without_records_has_no_distribution(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan, store = explored_run(write_matrix(EXPLORED_MATRIX), tmp_path, history="none")
    store.records_path(plan.cells[1]).unlink()
    assert cell_latency(store, plan.cells[1]) is None
    assert [c.cell_id for c in latencies(store, plan.cells)] == [c.cell_id for c in plan.cells if c != plan.cells[1]]


def test_every_launchs_records_are_read(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan, store = explored_run(write_matrix(EXPLORED_MATRIX), tmp_path, history="none")
    cell = plan.cells[0]
    records = store.records_path(cell)
    for launch in (0, 1):
        store.records_path(cell, launch).parent.mkdir(parents=True, exist_ok=True)
        store.records_path(cell, launch).write_bytes(records.read_bytes())
    records.unlink()
    found = cell_latency(store, cell)
    assert found is not None and found.ttft.requests == 2 * REQUESTS
