"""Local paths of launched servers, refused at validation: an engine's interpreter and a local model directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.errors import ConfigError
from harness.pipeline import validate
from harness.servers.local_paths import check_interpreters, check_model_dirs, interpreter_problem, model_dir_problem

from tests.support.matrices import BASE_MATRIX


def test_an_interpreter_must_be_an_executable_file(tmp_path: Path) -> None:
    python = tmp_path / "python"
    assert interpreter_problem(str(tmp_path / "absent")) == "no interpreter there on this machine"
    assert "a directory" in (interpreter_problem(str(tmp_path)) or "")
    python.write_text("#!/bin/sh\n")
    python.chmod(0o644)
    assert interpreter_problem(str(python)) == "a file this user may not execute"
    python.chmod(0o755)
    assert interpreter_problem(str(python)) is None


@pytest.mark.parametrize("model_id", ["fixture:tiny-qwen3-moe", "Qwen/Qwen3-30B-A3B", "org/absent-here"])
def test_hub_ids_and_fixtures_are_left_to_the_engine(model_id: str) -> None:
    assert model_dir_problem(model_id) is None


def test_a_local_model_path_must_be_a_directory(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"")
    assert model_dir_problem(str(tmp_path)) is None
    assert "a file, where a model directory" in (model_dir_problem(str(weights)) or "")
    assert model_dir_problem(str(tmp_path / "absent")) == "no such directory on this machine"
    assert model_dir_problem("./absent-model") == "no such directory on this machine"


def _matrix(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(BASE_MATRIX + "predict: {predictor: none}\n" + extra)
    return path


@pytest.mark.parametrize("where", ["file", "missing"])
def test_a_model_path_that_is_no_directory_is_refused_naming_file_key_and_fix(tmp_path: Path, where: str) -> None:
    target = tmp_path / "weights.bin"
    if where == "file":
        target.write_bytes(b"")
    path = _matrix(tmp_path, "")
    path.write_text(path.read_text().replace('id: "fixture:tiny-qwen3-moe"', f'id: "{target}"'))
    with pytest.raises(ConfigError) as raised:
        check_model_dirs(load_matrix(path), str(path))
    assert raised.value.source == str(path) and raised.value.key == "models.m.id"
    assert str(target) in str(raised.value) and "fix: point the key at the model's directory" in str(raised.value)


@pytest.mark.parametrize("where", ["missing", "directory", "not executable"])
def test_a_runtime_python_that_cannot_run_is_refused_before_anything_launches(tmp_path: Path, where: str) -> None:
    python = {"missing": tmp_path / "absent" / "python", "directory": tmp_path,
              "not executable": tmp_path / "py"}[where]
    if where == "not executable":
        python.write_text("")
        python.chmod(0o644)
    path = _matrix(tmp_path, f"runtimes: {{vllm: {{python: {python}}}}}\n")
    with pytest.raises(ConfigError, match=r"runtimes\.vllm\.python: .*\n  fix: install the engine's environment"):
        check_interpreters(load_matrix(path), str(path))
    with pytest.raises(ConfigError, match=str(path)):
        validate(path, out=tmp_path / "reports", lock_dir=tmp_path / "lock", launching=True)
