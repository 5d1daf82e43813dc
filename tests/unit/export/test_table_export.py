"""The run as one table for notebooks: a row per measured cell and per launch, the declared columns in order and of
their types, as CSV and as Parquet, an unmeasured figure empty rather than 0."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from harness.export import COLUMNS, cells_table, stored_cells
from harness.export.table_export import write_csv, write_parquet

from tests.support.exported_run import StoredRun


def test_a_row_per_measured_cell_and_per_launch_with_the_declared_columns(run: StoredRun) -> None:
    cells, _ = stored_cells(run.plan, run.store)
    table = cells_table(cells, run.plan.matrix)
    assert list(table.columns) == list(COLUMNS) and len(table) == 5
    assert {name: str(dtype) for name, dtype in table.dtypes.items()} == {n: t for n, (t, _) in COLUMNS.items()}
    pooled = table[table["launch"].isna()]
    assert list(pooled["cell_id"]) == [run.single.cell_id, run.launched.cell_id]
    launches = table[table["cell_id"] == run.launched.cell_id].dropna(subset=["launch"])
    assert list(launches["launch"]) == [0, 1, 2]
    assert list(launches["output_tok_s"]) == pytest.approx([s.output_throughput for s in run.launch_summaries])


def test_the_figures_are_the_cells_and_unmeasured_ones_are_empty(run: StoredRun) -> None:
    cells, _ = stored_cells(run.plan, run.store)
    row = cells_table(cells, run.plan.matrix).iloc[0]
    s = cells[0].summary
    assert s.ttft_ms is not None and s.tpot_ms is not None
    assert (row["ttft_ms_median"], row["ttft_ms_p99"], row["tpot_ms_median"]) == (
        s.ttft_ms.median, s.ttft_ms.p99, s.tpot_ms.median)
    assert (row["output_tok_s"], row["failed"], row["prefix_cache_hit_rate"]) == (800.0, 0, 0.25)
    assert row["power_source"] == "measured (NVML)" and row["model"] == "m" and row["speculation"] == "off"
    assert pd.isna(row["accept_rate"]) and pd.isna(row["goodput_req_s"]) and pd.isna(row["request_rate"])
    assert row["tok_s_per_device"] == pytest.approx(800.0 / 8)  # one replica of 8 B200s


def test_csv_and_parquet_hold_the_same_table(run: StoredRun, tmp_path: Path) -> None:
    cells, _ = stored_cells(run.plan, run.store)
    (csv,) = write_csv(cells, run.plan.matrix, tmp_path)
    (parquet,) = write_parquet(cells, run.plan.matrix, tmp_path)
    assert (csv.name, parquet.name) == ("cells.csv", "cells.parquet")
    from_csv, from_parquet = pd.read_csv(csv), pd.read_parquet(parquet)
    assert list(from_csv.columns) == list(from_parquet.columns) == list(COLUMNS)
    assert from_csv["cell_id"].tolist() == from_parquet["cell_id"].tolist()
    assert from_csv["output_tok_s"].tolist() == pytest.approx(from_parquet["output_tok_s"].tolist())
    schema = pq.read_schema(parquet)
    assert str(schema.field("launch").type) == "int64" and str(schema.field("accept_rate").type) == "double"
    assert from_parquet["launch"].isna().sum() == 2


def test_the_export_page_names_every_column() -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "export.md").read_text()
    table = page.split("## The table")[1].split("## Loading")[0]
    assert not [name for name in COLUMNS if f"`{name}`" not in table]
