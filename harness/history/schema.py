"""The results history's tables: one row per run, per cell measured in it, per server launch of that cell, per
figure of that launch, and per machine-speed probe of the run.

The migrations (``harness/history/migrations``, applied by ``harness.history.database``) create these tables; a test
checks that the migrated schema and these definitions agree, so a column added here without a migration fails it.
Figures are stored long (one row per launch and metric) so that a metric added to the harness needs no migration.
"""

from __future__ import annotations

from sqlalchemy import JSON, Column, Float, ForeignKey, Integer, MetaData, String, Table, Text, UniqueConstraint

metadata = MetaData()

runs = Table(
    "runs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_key", String(64), nullable=False, unique=True),
    Column("matrix", String(200), nullable=False, index=True),
    Column("matrix_sha256", String(64), nullable=False),
    Column("machine", String(300), nullable=False),
    Column("hardware", JSON, nullable=False),
    Column("harness_version", String(50), nullable=False),
    Column("harness_commit", String(64)),
    Column("engines", JSON, nullable=False),
    Column("started_at", String(40), nullable=False),
    Column("recorded_at", String(40), nullable=False),
)
"""One run of a matrix: ``run_key`` is the store's run id (``result_records.RunStamp``), so recording a run again,
or a resumed run, finds its row instead of adding one."""

cells = Table(
    "cells", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("cell_id", String(64), nullable=False),
    Column("label", String(500), nullable=False),
    Column("status", String(10), nullable=False),
    Column("reason", Text),
    Column("started_at", String(40), nullable=False),
    Column("finished_at", String(40), nullable=False),
    UniqueConstraint("run_id", "cell_id", name="uq_cells_run_cell"),
)

launches = Table(
    "launches", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("cell_row", Integer, ForeignKey("cells.id", ondelete="CASCADE"), nullable=False),
    Column("launch", Integer, nullable=False),
    Column("machine_s", Float),
    UniqueConstraint("cell_row", "launch", name="uq_launches_cell_launch"),
)
"""A server launch of a cell, with the machine-speed probe's seconds around it (None where no probe ran)."""

figures = Table(
    "figures", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("launch_row", Integer, ForeignKey("launches.id", ondelete="CASCADE"), nullable=False),
    Column("metric", String(100), nullable=False),
    Column("value", Float),
    UniqueConstraint("launch_row", "metric", name="uq_figures_launch_metric"),
)
"""One gateable figure (``harness.metrics.gateable``) of one launch."""

expert_loads = Table(
    "expert_loads", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("launch_row", Integer, ForeignKey("launches.id", ondelete="CASCADE"), nullable=False),
    Column("layer", Integer, nullable=False),
    Column("counts", JSON, nullable=False),
    Column("rows", Integer, nullable=False),
    Column("collector", String(200), nullable=False),
    UniqueConstraint("launch_row", "layer", name="uq_expert_loads_launch_layer"),
)
"""One MoE layer's expert load over one launch's measured load: tokens routed to each expert (``counts``, in expert
order) and the tokens routed through the layer (``harness.telemetry.expert_load_watch``)."""

probes = Table(
    "probes", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("seconds", Float, nullable=False),
    Column("at", String(40), nullable=False),
    UniqueConstraint("run_id", "position", name="uq_probes_run_position"),
)
"""The run's machine-speed probes (``harness.calibration``): position ``p`` ran just before round ``p``."""
