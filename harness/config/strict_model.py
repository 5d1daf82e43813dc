"""The base of the matrix's own config models: unknown keys are errors and values never change after validation.

A typo in YAML must be an error that names the key, never a silently ignored setting (``extra="forbid"``), and a
validated matrix is read by every stage without one of them editing it for the rest (``frozen``). ``_added_later``
lets a section grow a field without changing the ids of cells published before it (``harness.plan.cells``).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Base of every config model: unknown keys are errors and values never change after validation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    _added_later: ClassVar[frozenset[str]] = frozenset()
    """Fields added after cell ids were first published: they enter a server's id only when set (plan.cells)."""
