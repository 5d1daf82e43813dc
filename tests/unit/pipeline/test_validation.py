"""One validation pass: `plan`, `run` and `compare` refuse every bad matrix alike (exit 2, the same message, the
file and the key named), before any fixture is built or any process started.

The pass is also fuzzed (Hypothesis, ``_edits``): random edits of the committed matrices (a key dropped, a value
swapped for another type, a number at an extreme, unicode in a name, a line written twice), 300 cases over the
committed CPU and GPU matrices, derandomized (the same cases on every run: the seed is derived from the test's name),
no example database; each ends in a plan or in a ConfigError naming the file, never another exception."""

from __future__ import annotations

import copy
import math
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import ConfigError, HarnessError
from harness.pipeline import validate
from harness.pipeline.validation import deferred_workloads, with_executor
from harness.plan import Plan

from tests.support.matrices import BASE_MATRIX

# name -> (what is appended to / replaced in a valid matrix, a phrase the one message must hold)
BAD: dict[str, tuple[Callable[[str], str], str]] = {
    "unknown key": (lambda m: m + "colour: blue\n", "colour"),
    "unknown runtime": (lambda m: m.replace("axes:\n", "axes:\n  runtime: [tgi]\n"), "unknown runtime 'tgi'"),
    "reference nobody runs": (lambda m: m + "parity: {limit: 40, reference: fp8}\n", "parity.reference"),
    "parity sample too small": (lambda m: m + "parity: {limit: 1}\n", "parity.limit"),
    "gate metric unknown": (lambda m: m + "gates: {metrics: [warp_speed]}\n", "warp_speed"),
    "dataset missing": (lambda m: m.replace("kind: random, input_tokens: 16, output_tokens: 8",
                                            "kind: dataset, path: /nonexistent/chats.jsonl"), "no such file"),
    "trace missing": (lambda m: m.replace("kind: random, input_tokens: 16, output_tokens: 8",
                                          "kind: trace, path: /nonexistent/trace.jsonl"), "no such trace file"),
    "token ids to sglang-router": (lambda m: m.replace("axes:\n", "runtimes: {sglang: {python: /usr/bin/python3}}\n"
                                                       "axes:\n  runtime: [sglang]\n  topology: [{replicas: 2}]\n"),
                                   "workloads.w.api"),
    "mtp without layers": (lambda m: m.replace("}\nworkloads", ", num_nextn_predict_layers: 0}\nworkloads")
                           .replace("axes:\n", "axes:\n  speculation: [mtp]\n"), "MTP"),
}


@pytest.fixture
def good(tiny_tokenizer_dir: Path) -> str:
    """A valid matrix whose model's tokenizer is on disk, so its workloads are checked before any build."""
    return BASE_MATRIX.replace('"fixture:tiny-qwen3-moe"', f'"{tiny_tokenizer_dir}"')


def _message(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("error: ")]
    assert lines, output
    return lines[0]


@pytest.fixture
def nothing_launches(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that let a bad matrix through would build fixtures or start a server: fail instead."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the validation let a bad matrix through to a build or a launch")

    monkeypatch.setattr("harness.pipeline.rounds.ensure_fixtures", refuse)
    monkeypatch.setattr("harness.compare.ensure_fixtures", refuse)
    monkeypatch.setattr("harness.servers.process.ServerProcess.__aenter__", refuse)


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.usefixtures("nothing_launches")
def test_plan_run_and_compare_refuse_a_bad_matrix_alike(case: str, good: str, tmp_path: Path) -> None:
    edit, phrase = BAD[case]
    bad, fine = tmp_path / "bad.yaml", tmp_path / "good.yaml"
    bad.write_text(textwrap.dedent(edit(good)))
    fine.write_text(textwrap.dedent(good))
    out = tmp_path / "reports"
    runner = CliRunner()
    results = {
        "plan": runner.invoke(app, ["plan", str(bad)]),
        "run": runner.invoke(app, ["run", str(bad), "--out", str(out)]),
        "compare A": runner.invoke(app, ["compare", str(bad), str(fine), "--out", str(out)]),
        "compare B": runner.invoke(app, ["compare", str(fine), str(bad), "--out", str(out)]),
    }
    assert {name: r.exit_code for name, r in results.items()} == dict.fromkeys(results, 2), \
        {name: r.output for name, r in results.items()}
    messages = {name: _message(r.output) for name, r in results.items()}
    assert len(set(messages.values())) == 1, messages
    assert phrase in messages["plan"] and str(bad) in messages["plan"], messages["plan"]
    assert not out.exists()  # nothing was stored, so nothing ran


def test_the_good_matrix_passes_and_a_fixture_waits_for_its_tokenizer(good: str, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "good.yaml"
    path.write_text(textwrap.dedent(good))
    assert deferred_workloads(validate(path)) == []
    monkeypatch.setenv("HARNESS_FIXTURES_DIR", str(tmp_path / "no-fixtures-yet"))
    path.write_text(textwrap.dedent(BASE_MATRIX))
    assert deferred_workloads(validate(path)) == ["w on m"]
    plan = CliRunner().invoke(app, ["plan", str(path)])
    assert plan.exit_code == 0 and "checked when their fixture is built" in plan.output and "w on m" in plan.output


@pytest.mark.usefixtures("nothing_launches")
def test_an_engine_environment_not_installed_is_refused_before_a_launch(good: str, tmp_path: Path) -> None:
    path, out = tmp_path / "sglang.yaml", tmp_path / "reports"
    path.write_text(textwrap.dedent(good.replace(
        "axes:\n", "runtimes: {sglang: {python: build/engines/nowhere/bin/python}}\naxes:\n  runtime: [sglang]\n")))
    runner = CliRunner()
    assert runner.invoke(app, ["plan", str(path)]).exit_code == 0  # a plan only prints the commands
    for result in (runner.invoke(app, ["run", str(path), "--out", str(out)]),
                   runner.invoke(app, ["compare", str(path), str(path), "--out", str(out)])):
        assert result.exit_code == 2, result.output
        message = _message(result.output)
        assert "runtimes.sglang.python: build/engines/nowhere/bin/python: no interpreter there" in message
        assert "make setup-sglang" in result.output
    assert not out.exists()


def test_the_command_line_executor_is_checked_with_the_matrix(good: str, tmp_path: Path) -> None:
    path = tmp_path / "good.yaml"
    path.write_text(textwrap.dedent(good))
    plan = validate(path)
    with pytest.raises(ConfigError, match="unknown executor 'k8s'"):
        with_executor(plan, "k8s", None)
    with pytest.raises(ConfigError, match="--max-parallel applies to the slurm executor only"):
        with_executor(plan, None, 2)
    assert with_executor(plan, "slurm", 2).matrix.executor.kind == "slurm"


REPO = Path(__file__).resolve().parents[3]
MATRICES = ("default", "regress", "workloads", "topology", "more", "deepseek-v31-b200", "qwen3-235b-b200")
ODD_VALUES = (None, True, 0, -1, 10**18, math.inf, math.nan, "", "é\u202e名", [], {}, [1, "x"], {"x": 1}, 1.5)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path of a YAML tree: mapping keys and list indexes, depth first."""
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def _set(tree: Any, path: tuple[Any, ...], value: Any, *, drop: bool = False) -> None:
    parent = tree
    for step in path[:-1]:
        parent = parent[step]
    if drop:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


@st.composite
def _edits(draw: st.DrawFn) -> tuple[str, str]:
    """A committed matrix's text with one to three random edits; (its name, the text)."""
    name = draw(st.sampled_from(MATRICES))
    tree = yaml.safe_load((REPO / "matrices" / f"{name}.yaml").read_text())
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(tree)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        kind = draw(st.sampled_from(("drop", "odd", "number", "rename")))
        if kind == "drop":
            _set(tree, path, None, drop=True)
        elif kind == "odd":  # a copy: a later edit may write into it, and ODD_VALUES must stay the same
            _set(tree, path, copy.deepcopy(draw(st.sampled_from(ODD_VALUES))))
        elif kind == "number":
            _set(tree, path, draw(st.one_of(st.integers(-2**63, 2**63), st.floats(allow_nan=True))))
        elif isinstance(path[-1], str):  # a key renamed, unicode and all
            parent = tree
            for step in path[:-1]:
                parent = parent[step]
            parent[draw(st.text(min_size=1, max_size=8))] = parent.pop(path[-1])
    text = yaml.safe_dump(tree, allow_unicode=True, sort_keys=False)
    if draw(st.booleans()):  # a line written twice: a duplicated key at some depth, or a duplicated list item
        lines = text.splitlines()
        at = draw(st.integers(0, len(lines) - 1))
        text = "\n".join([*lines[:at + 1], lines[at], *lines[at + 1:]]) + "\n"
    return name, text


@settings(max_examples=300, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=_edits())
def test_an_edited_matrix_plans_or_is_refused_with_a_message(case: tuple[str, str], tmp_path: Path) -> None:
    name, text = case
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    try:
        plan = validate(path, out=tmp_path / "reports", lock_dir=tmp_path / "lock", cluster_pending=True)
    except HarnessError as exc:
        message = str(exc)
        assert str(path) in message or "--" in message, message  # names the file (or the flag) it is about
        return
    assert isinstance(plan, Plan) and (plan.cells or plan.searches)  # matrices/more.yaml is one SLO search


@pytest.mark.parametrize("name", MATRICES)
def test_the_committed_matrices_plan(name: str, tmp_path: Path) -> None:
    """The unedited matrices are valid: the fuzzing starts from plans that pass."""
    validate(REPO / "matrices" / f"{name}.yaml", out=tmp_path, lock_dir=tmp_path / "lock", cluster_pending=True)
