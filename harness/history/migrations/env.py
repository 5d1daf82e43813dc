"""Alembic's environment for the results history: migrations run on the connection ``harness.history.database``
hands over (``config.attributes["connection"]``), never on a URL of their own."""

from __future__ import annotations

from alembic import context

from harness.history.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
