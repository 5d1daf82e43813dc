"""Plan-time sense: what a plan asks that is legal but implausible is a warning naming the key, what this machine
cannot drive is an error before anything launches, and a plan whose estimate is beyond the matrix's bound is not
run without --yes."""

from __future__ import annotations

import resource
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.analysis import estimate, sanity
from harness.cli import app
from harness.config import load_matrix
from harness.errors import ConfigError
from harness.pipeline import validate
from harness.plan import expand

from tests.support.matrices import BASE_MATRIX


def _plan(write_matrix: Callable[[str], Path], extra: str) -> tuple[Path, object]:
    path = write_matrix(BASE_MATRIX.replace("axes:\n  concurrency: [1, 2]\n", "") + extra)
    return path, expand(load_matrix(path))


def test_a_sensible_plan_has_no_doubts(write_matrix: Callable[[str], Path]) -> None:
    _, plan = _plan(write_matrix, "axes: {concurrency: [1, 64]}\n")
    assert sanity.implausible(plan, estimate(plan)) == []  # type: ignore[arg-type]


def test_concurrency_beyond_the_server_and_drafts_beyond_any_recipe_are_warnings(
        write_matrix: Callable[[str], Path]) -> None:
    extra = ("axes: {concurrency: [4, 1000], speculation: [{method: ngram, k: 300}],"
             " topology: [{replicas: 2}]}\nserver: {max_num_seqs: 128}\n")
    _, plan = _plan(write_matrix, extra)
    found = sanity.implausible(plan)  # type: ignore[arg-type]
    assert [(f.key, f.error) for f in found] == [("axes.concurrency", False), ("axes.speculation", False)]
    assert "admits 256 at once (server.max_num_seqs 128 x 2 decode server(s))" in found[0].problem
    assert "k=300" in found[1].problem and "k <= 16" in found[1].fix


def test_request_counts_warm_ups_and_times_beyond_their_bounds_are_warnings_naming_the_key(
        write_matrix: Callable[[str], Path]) -> None:
    path = write_matrix(BASE_MATRIX.replace("num_requests: 4, warmup_requests: 1",
                                            "num_requests: 200000, warmup_requests: 300000")
                        + "server: {startup_timeout_s: 900000, request_timeout_s: 300}\n"
                        + "load: {duration_s: 1000000, ramp_up_s: 10}\n")
    found = {f.key: f for f in sanity.implausible(expand(load_matrix(path)))}
    assert set(found) == {"workloads.w.num_requests", "workloads.w.warmup_requests", "server.startup_timeout_s",
                          "load.duration_s"}  # request_timeout_s and ramp_up_s are within their bounds
    assert not any(f.error for f in found.values())
    assert "200,000 measured requests" in found["workloads.w.num_requests"].problem
    assert "warm-up outweighs" in found["workloads.w.warmup_requests"].problem
    assert "900,000 s" in found["server.startup_timeout_s"].problem
    assert "milliseconds" in found["load.duration_s"].fix


def test_more_connections_than_open_files_is_an_error_before_launch(
        write_matrix: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sanity.resource, "getrlimit", lambda _: (1024, 1024))
    path, _ = _plan(write_matrix, "axes: {concurrency: [4, 5000]}\nserver: {max_num_seqs: 8192}\n")
    with pytest.raises(ConfigError) as caught:
        validate(path)
    assert caught.value.key == "axes.concurrency" and "1024 open files" in caught.value.problem
    assert "ulimit -n" in caught.value.fix
    assert resource.getrlimit(resource.RLIMIT_NOFILE)  # the real limit is untouched outside the patch


def test_an_estimate_beyond_the_bound_is_refused_unless_told(write_matrix: Callable[[str], Path],
                                                             tmp_path: Path) -> None:
    path, plan = _plan(write_matrix, "axes: {concurrency: [1]}\nestimate: {max_machine_hours: 2}\n")
    path.write_text(path.read_text().replace("num_requests: 4", "num_requests: 100000"))
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "estimate.max_machine_hours" in result.output and "--yes" in result.output
    assert not (tmp_path / "out").exists()  # nothing launched, nothing written
    planned = CliRunner().invoke(app, ["plan", str(path)])
    assert planned.exit_code == 0 and "implausible (legal, but check before running):" in planned.output
