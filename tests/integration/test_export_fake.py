"""`harness run` on the fake engine launched as a real subprocess, then `harness export`: the Benchmark Reports of a
real run (its lock, its server's logged command line, its records, its launches) valid against llm-d's published
JSON Schema, and the table of the same cells. What `make bench` runs after its gate, on the fake engine."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import yaml
from jsonschema import Draft202012Validator

from harness.export import BR_SCHEMA_PATH, COLUMNS

from tests.support import cli

pytestmark = pytest.mark.fake_engine

MATRIX = """
name: exported
hardware: {{kind: cpu}}
models:
  m: {{id: "{model}"}}
workloads:
  w: {{kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1, range_ratio: 0.5}}
axes:
  runtime: [fake]
  speculation: ["off", {{method: mtp, k: 2}}]
  concurrency: [1]
server: {{startup_timeout_s: 60}}
"""


@pytest.fixture
def matrix(write_matrix: Callable[..., Path], tiny_tokenizer_dir: Path) -> Path:
    return write_matrix(MATRIX.format(model=tiny_tokenizer_dir))


def test_a_real_runs_reports_validate_and_its_table_holds_the_same_cells(matrix: Path, tmp_path: Path) -> None:
    out, lock_dir = tmp_path / "reports", tmp_path / "lock"
    where = ("--out", out, "--lock-dir", lock_dir)
    run = cli.harness("run", str(matrix), "--launches", "2", *where)
    assert run.returncode == 0, run.stderr

    exported = cli.harness("export", str(matrix), *where)
    assert exported.returncode == 0, exported.stderr
    assert "exported 2 measured cells and 4 single launches as br: 6 files" in exported.stdout
    validator = Draft202012Validator(json.loads(BR_SCHEMA_PATH.read_text()))
    reports = [yaml.safe_load(p.read_text()) for p in sorted((out / "exported" / "export" / "br").iterdir())]
    assert len(reports) == 6
    for report in reports:
        assert not [e.message for e in validator.iter_errors(report)]
        (engine,) = report["scenario"]["stack"]
        assert engine["standardized"]["tool"] == "fake" and engine["native"]["config"]["command_source"] == "log"
        assert "harness_testing.fake_engine" in engine["native"]["config"]["command"]
        aggregate = report["results"]["request_performance"]["aggregate"]
        launches = report["results"]["observability"]["metadata"]["harness"]["launches"]
        assert aggregate["requests"]["total"] == 4 * launches  # a pooled cell counts both launches' requests
        assert aggregate["throughput"]["output_token_rate"]["mean"] > 0
        assert report["scenario"]["load"]["standardized"]["input_seq_len"]["value"] > 0
    speculative = [r for r in reports if "mtp" in r["run"]["description"]]
    assert all("speculation" in r["results"]["observability"]["metadata"] for r in speculative)

    table = cli.harness("export", str(matrix), "--format", "csv", *where)
    assert table.returncode == 0, table.stderr
    cells = pd.read_csv(out / "exported" / "export" / "cells.csv")
    assert list(cells.columns) == list(COLUMNS) and len(cells) == 6
    assert cells["launch"].isna().sum() == 2
