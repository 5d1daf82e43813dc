"""A stored run in shared formats: llm-d's Benchmark Report (one per measured cell and per launch) and one table
of the cells for notebooks (CSV, Parquet). Reads only what is stored, computes no verdict.

``benchmark_report`` is the project's model of the report (version 0.2.1; the published JSON Schema is committed
beside it), ``stored_cell`` gathers what the run stored about each cell, ``br_scenario`` and ``br_export`` build a
report from it (``report_metadata``: the harness's extras), ``table_export`` the table, and ``export_files`` is the
one entry (``export_run``).
"""

from harness.export.benchmark_report import BR_SCHEMA_PATH, BR_VERSION, BenchmarkReport
from harness.export.br_export import cell_report
from harness.export.export_files import EXPORT_FORMATS, Exported, export_run
from harness.export.stored_cell import Skipped, StoredCell, stored_cells
from harness.export.table_export import COLUMNS, cells_table

__all__ = [
    "BenchmarkReport", "BR_SCHEMA_PATH", "BR_VERSION", "cell_report", "cells_table", "COLUMNS",
    "EXPORT_FORMATS", "export_run", "Exported", "Skipped", "stored_cells", "StoredCell",
]
