"""The catalogue of fixture ids a matrix may name (``fixture:<name>``), for validation.

Each fixture is one entry of ``FIXTURES`` (entry-point group ``harness.fixtures``: ``harness.registry``), its
``Recipe`` defined in the module that trains it; the schema needs only the names, which are read without importing
any recipe (they import torch). Building and locating them is ``harness.fixtures``.
"""

from __future__ import annotations

from harness.registry import Registry

FIXTURES: Registry[object] = Registry("fixture", "harness.fixtures")
"""Every fixture's recipe (a ``harness.fixtures.train.Recipe``), by its name (docs/extending/index.md)."""
FIXTURE_PREFIX = "fixture:"
"""How a matrix names a fixture as a model or drafter id: ``fixture:<name>``."""


def fixture_names() -> tuple[str, ...]:
    """Every fixture's name, sorted; nothing is imported."""
    return FIXTURES.names()


def check_fixture_id(model_id: str) -> str:
    """``model_id`` unchanged; a ``fixture:<name>`` naming no fixture raises ValueError (for config validators)."""
    name = model_id.removeprefix(FIXTURE_PREFIX)
    if model_id.startswith(FIXTURE_PREFIX) and name not in FIXTURES:
        raise ValueError(f"unknown fixture {name!r}; the project builds: "
                         + ", ".join(FIXTURE_PREFIX + n for n in fixture_names()))
    return model_id
