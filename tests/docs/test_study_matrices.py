"""The matrices beside the docs pages (a study's servers and cells, ``docs/<page>/<name>.yaml``) still plan: a
study whose matrix no longer loads cannot be reproduced by the command its page gives."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.pipeline import load_plan

DOCS = Path(__file__).resolve().parents[2] / "docs"
MATRICES = sorted(p for p in DOCS.rglob("*.yaml") if "axes" in (yaml.safe_load(p.read_text()) or {}))


def test_the_study_matrices_are_found() -> None:
    assert {p.name for p in MATRICES} >= {"runs_repeated.yaml", "runs_until_10s.yaml", "sglang_recorder_on.yaml"}


@pytest.mark.parametrize("path", MATRICES, ids=[str(p.relative_to(DOCS)) for p in MATRICES])
def test_a_study_matrix_plans(path: Path) -> None:
    assert load_plan(path).cells
