"""The telemetry stage: what a CPU cell records (that there is no GPU telemetry)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

from harness.config import load_matrix
from harness.plan import expand
from harness.store import Store
from harness.telemetry import telemetry

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import summary


def test_a_cpu_cell_records_that_it_has_no_gpu_telemetry(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX)))
    store = Store(tmp_path, plan.matrix.name)
    cell = plan.cells[0]
    async def cell_ran() -> None:
        async with telemetry(cell, store) as output:
            output.summary = summary(320.0, 10.0).model_copy(update={"total_output_tokens": 640})

    asyncio.run(cell_ran())
    data = json.loads(store.telemetry_path(cell).read_text())
    assert data["available"] is False and data["power_w_per_device_mean"] is None
    assert data["output_tokens"] == 640 and "no GPU" in data["reason"]
