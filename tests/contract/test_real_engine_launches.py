"""Every test that starts a real engine says what it launches and why it needs those launches of its own.

A real vLLM server costs 45-90 s to start on two cores and seconds to use, and the suite has a 15-minute budget
(docs/studies/timings.md). So a test marked ``integration`` carries a ``Launches:`` paragraph in its docstring: the
servers it starts and why no other test's launches can serve it (it kills its server, its matrix is what is tested,
the server runs inside a Slurm job). A new real-engine test then arrives with its cost stated, and a reviewer can ask
whether it could join an existing run instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MARK = "pytest.mark.integration"


def _marked(node: ast.expr) -> bool:
    return MARK in ast.unparse(node)


def undeclared_launches(source: str) -> tuple[list[str], list[str]]:
    """(real-engine tests, those among them whose docstring has no ``Launches:`` paragraph) in a test module."""
    tree = ast.parse(source)
    module_marked = any(isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets)
                        and _marked(node.value) for node in tree.body)
    engines, undeclared = [], []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.name.startswith("test_"):
            continue
        if module_marked or any(_marked(d) for d in node.decorator_list):
            engines.append(node.name)
            if "Launches:" not in (ast.get_docstring(node) or ""):
                undeclared.append(node.name)
    return engines, undeclared


def test_every_real_engine_test_states_its_launches() -> None:
    found, missing = [], []
    for path in sorted((REPO / "tests" / "integration").glob("test_*.py")):
        engines, undeclared = undeclared_launches(path.read_text())
        found += engines
        missing += [f"{path.name}::{name}" for name in undeclared]
    assert len(found) >= 4, found  # the MTP, killed-server, evidence and Slurm tests at least: the scan sees them
    assert not missing, "say what each launches and why it cannot share a server ('Launches: ...'): " + ", ".join(
        missing)


def test_an_undeclared_real_engine_test_is_caught() -> None:
    planted = '''
import pytest
pytestmark = pytest.mark.integration

def test_declared():
    """Checks a thing. Launches: one vLLM server, killed by the test."""

def test_silent():
    """Checks another thing."""
'''
    assert undeclared_launches(planted) == (["test_declared", "test_silent"], ["test_silent"])
    decorated = planted.replace("pytestmark = pytest.mark.integration", "").replace(
        "def test_silent", "@pytest.mark.integration\ndef test_silent")
    assert undeclared_launches(decorated) == (["test_silent"], ["test_silent"])
