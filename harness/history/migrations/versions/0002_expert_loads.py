"""Each launch's expert load: the tokens every MoE layer routed to each expert (``telemetry.expert_load``).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "expert_loads",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("launch_row", sa.Integer, sa.ForeignKey("launches.id", ondelete="CASCADE"), nullable=False),
        sa.Column("layer", sa.Integer, nullable=False),
        sa.Column("counts", sa.JSON, nullable=False),
        sa.Column("rows", sa.Integer, nullable=False),
        sa.Column("collector", sa.String(200), nullable=False),
        sa.UniqueConstraint("launch_row", "layer", name="uq_expert_loads_launch_layer"),
    )


def downgrade() -> None:
    op.drop_table("expert_loads")
