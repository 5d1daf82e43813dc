"""Escalation picks the doubtful figures and the baseline's revision, and merges the paired verdicts back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.regress import baseline_revision, doubtful_figures, merged
from harness.verdict import GateResult, GateRow, read_baseline


def _row(label: str, metric: str, status: str) -> GateRow:
    return GateRow(label, metric, "tok/s", "higher", 1.0, 1.0, status)  # type: ignore[arg-type]


def test_only_regressed_or_inconclusive_figures_escalate_and_a_failed_cell_does_not() -> None:
    quick = GateResult(rows=(_row("a", "output_throughput", "inconclusive"), _row("a", "ttft_ms.median", "ok"),
                             _row("b", "tpot_ms.median", "regressed")), provenance=(), tolerance=0.1, launches=3)
    assert doubtful_figures(quick) == (("a", "output_throughput"), ("b", "tpot_ms.median"))
    broken = GateResult(rows=(*quick.rows, _row("c", "cell", "failed")), provenance=(), tolerance=0.1, launches=3)
    assert doubtful_figures(broken) is None
    paired = GateResult(rows=(_row("a", "output_throughput", "ok"), _row("b", "tpot_ms.median", "ok")),
                        provenance=("paired",), tolerance=0.1, launches=4, machine_speed="paired")
    final = merged(quick, paired)
    assert [r.status for r in final.rows] == ["ok", "ok", "ok"] and final.exit_code == 0
    assert final.provenance == ("paired",)


def _baseline(path: Path, machines: list[tuple[str, str | None, str]]) -> Path:
    entries = [{"matrix": "m", "matrix_sha256": "x", "harness_version": "0.1.0", "harness_commit": commit,
                "hardware": {"kind": "cpu", "name": "a 2-core VM", "count": 2, "driver": None, "isa": isa},
                "created_at": created, "runs": 1, "cells": {}} for isa, commit, created in machines]
    path.write_text(json.dumps({"schema_version": 3, "matrix": "m", "machines": entries}))
    return path


def test_the_revision_is_this_machines_baselines_else_the_newest(tmp_path: Path) -> None:
    path = _baseline(tmp_path / "b.json", [("AVX2", "a" * 40, "2026-11-27T00:00:00+00:00"),
                                           ("AVX-512", "b" * 40, "2026-11-26T00:00:00+00:00")])
    own = read_baseline(path).machines[1].hardware.fingerprint
    assert baseline_revision(path, own) == "b" * 40
    assert baseline_revision(path, "another machine") == "a" * 40
    empty = _baseline(tmp_path / "c.json", [("AVX2", None, "2026-11-27T00:00:00+00:00")])
    with pytest.raises(ConfigError, match="harness_commit"):
        baseline_revision(empty, "x")
