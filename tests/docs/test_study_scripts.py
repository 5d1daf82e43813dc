"""The study scripts beside the docs pages they support (``docs/<page>/<script>.py`` beside ``docs/<page>.md``,
docs/studies/index.md): each imports without running (a measurement runs only as a script), each is named by its
page with the path that reproduces it, and no docs page names a script that is not there."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
NOT_STUDIES = ("hooks",)
"""docs/ folders of code that is not a study (the site build's hook)."""


def study_scripts() -> list[Path]:
    """Every script under docs/ outside NOT_STUDIES; a package's modules (the tool-calling candidate beside its
    study) are imported by their script, not run."""
    return sorted(p for p in DOCS.rglob("*.py") if p.relative_to(DOCS).parts[0] not in NOT_STUDIES
                  and "__pycache__" not in p.parts and not (p.parent / "__init__.py").is_file())


SCRIPTS = study_scripts()
IDS = [str(p.relative_to(DOCS)) for p in SCRIPTS]


def test_the_studies_are_found() -> None:
    # the layout moving (or the glob breaking) must not leave the tests below with nothing to check
    assert len(SCRIPTS) >= 13 and all(p.parent != DOCS for p in SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS, ids=IDS)
def test_a_study_imports_and_has_a_main(script: Path) -> None:
    name = f"study_{script.stem}"
    spec = importlib.util.spec_from_file_location(name, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(script.parent))  # as when run: a package beside the script is importable
    sys.modules[name] = module  # dataclasses resolve their annotations through it
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(script.parent))
        del sys.modules[name]
    assert callable(getattr(module, "main", None)), f"{script.name} has no main()"


@pytest.mark.parametrize("script", SCRIPTS, ids=IDS)
def test_a_study_runs_only_as_a_script(script: Path) -> None:
    """Importing does not measure: at the top level, nothing is called outside ``if __name__ == "__main__":`` but
    definitions' own values (a decorator, a constant's constructor)."""
    tree = ast.parse(script.read_text())
    guards = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) in (
        "__name__ == '__main__'", '__name__ == "__main__"')]
    assert len(guards) == 1, f"{script.name}: one `if __name__ == \"__main__\":` at the end"
    assert tree.body[-1] is guards[0], f"{script.name}: the guard is the module's last statement"
    calls = [node.lineno for node in tree.body if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)]
    assert not calls, f"{script.name}: top-level calls at lines {calls}"


@pytest.mark.parametrize("script", SCRIPTS, ids=IDS)
def test_a_study_is_named_by_the_page_it_supports(script: Path) -> None:
    folder = script.relative_to(DOCS).parts[:-1]
    page = DOCS.joinpath(*folder).with_suffix(".md")
    assert page.is_file(), f"{script.relative_to(REPO)}: no page {page.relative_to(REPO)} beside its folder"
    assert str(script.relative_to(REPO)) in page.read_text(), f"{page.name} does not name {script.relative_to(REPO)}"


ISSUE = re.compile(r"\bissues?\s+#?\d+|(?<![\w/])#\d+\b", re.IGNORECASE)


@pytest.mark.parametrize("script", SCRIPTS, ids=IDS)
def test_a_study_says_what_was_measured_not_an_issue_number(script: Path) -> None:
    found = ISSUE.findall(script.read_text())
    assert not found, f"{script.name} cites {found}: say what was measured instead"


CITED = re.compile(r"\b((?:docs|tools|benchmarks)/[\w./-]+?\.(?:py|yaml))\b")


def test_every_script_the_docs_name_is_there() -> None:
    pages = [REPO / "README.md", *DOCS.rglob("*.md")]
    missing = sorted({f"{page.relative_to(REPO)}: {path}" for page in pages
                      for path in CITED.findall(page.read_text()) if not (REPO / path).is_file()})
    assert not missing, "docs name scripts that are not there: " + ", ".join(missing)
