"""The stored run every export test reads (``tests/support/exported_run.py``), and the published schema's validator."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from harness.export import BR_SCHEMA_PATH

from tests.support.exported_run import GPU_MATRIX, StoredRun, stored_run


@pytest.fixture
def run(write_matrix: Callable[..., Path], tmp_path: Path) -> StoredRun:
    return stored_run(write_matrix(GPU_MATRIX), tmp_path)


@pytest.fixture(scope="session")
def br_validator() -> Draft202012Validator:
    """llm-d's published Benchmark Report schema (2020-12, as its README says), date-times checked too: jsonschema
    checks the ``date-time`` format only with a package the tree does not have, so it is checked here as an ISO 8601
    date and time with its offset."""
    schema = json.loads(BR_SCHEMA_PATH.read_text())
    Draft202012Validator.check_schema(schema)
    formats = FormatChecker()

    @formats.checks("date-time", raises=ValueError)
    def date_time(value: object) -> bool:
        return not isinstance(value, str) or ("T" in value and datetime.fromisoformat(value).tzinfo is not None)

    return Draft202012Validator(schema, format_checker=formats)
