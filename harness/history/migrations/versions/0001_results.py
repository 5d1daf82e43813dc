"""The first schema of the results history: runs, cells, launches, figures and machine-speed probes.

Revision ID: 0001
Revises:
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_key", sa.String(64), nullable=False, unique=True),
        sa.Column("matrix", sa.String(200), nullable=False),
        sa.Column("matrix_sha256", sa.String(64), nullable=False),
        sa.Column("machine", sa.String(300), nullable=False),
        sa.Column("hardware", sa.JSON, nullable=False),
        sa.Column("harness_version", sa.String(50), nullable=False),
        sa.Column("harness_commit", sa.String(64)),
        sa.Column("engines", sa.JSON, nullable=False),
        sa.Column("started_at", sa.String(40), nullable=False),
        sa.Column("recorded_at", sa.String(40), nullable=False),
    )
    op.create_index("ix_runs_matrix", "runs", ["matrix"])
    op.create_table(
        "cells",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("cell_id", sa.String(64), nullable=False),
        sa.Column("label", sa.String(500), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("started_at", sa.String(40), nullable=False),
        sa.Column("finished_at", sa.String(40), nullable=False),
        sa.UniqueConstraint("run_id", "cell_id", name="uq_cells_run_cell"),
    )
    op.create_table(
        "launches",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("cell_row", sa.Integer, sa.ForeignKey("cells.id", ondelete="CASCADE"), nullable=False),
        sa.Column("launch", sa.Integer, nullable=False),
        sa.Column("machine_s", sa.Float),
        sa.UniqueConstraint("cell_row", "launch", name="uq_launches_cell_launch"),
    )
    op.create_table(
        "figures",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("launch_row", sa.Integer, sa.ForeignKey("launches.id", ondelete="CASCADE"), nullable=False),
        sa.Column("metric", sa.String(100), nullable=False),
        sa.Column("value", sa.Float),
        sa.UniqueConstraint("launch_row", "metric", name="uq_figures_launch_metric"),
    )
    op.create_table(
        "probes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("seconds", sa.Float, nullable=False),
        sa.Column("at", sa.String(40), nullable=False),
        sa.UniqueConstraint("run_id", "position", name="uq_probes_run_position"),
    )


def downgrade() -> None:
    for table in ("probes", "figures", "launches", "cells", "runs"):
        op.drop_table(table)
