"""The local paths a matrix names for the servers it launches here, checked before anything launches.

An engine's interpreter (``runtimes.<name>.python``) must be an executable file: missing, a directory or without
the execute bit, the server could only fail at its start, after the run has begun. A model or checkpoint given as a
local path (``models.<name>.id``, ``models.<name>.checkpoints.<precision>``) must be a directory: a file there, or
nothing at a path that is plainly local (``/...``, ``./...``, ``../...``, ``~/...``), is refused at validation. An id
without that form that names nothing here is a hub id (``Qwen/Qwen3-30B-A3B``) and is left to the engine; a
``fixture:<name>`` is the project's own and built by ``harness fixtures``. Each refusal is a ``ConfigError`` naming
the matrix file, the key and the fix: exit 2 from the command line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from harness.config.fixtures import FIXTURE_PREFIX
from harness.config.matrix import Matrix
from harness.errors import ConfigError

LOCAL_FORMS = ("/", "./", "../", "~")
"""How an id that can only be a local path begins (a hub id is ``org/name``)."""


def interpreter_problem(python: str) -> str | None:
    """What keeps ``python`` from serving as an engine's interpreter; None when it can."""
    path = Path(python).expanduser()
    if path.is_dir():
        return "a directory, where the interpreter (a file such as .venv/bin/python) is wanted"
    if not path.exists():
        return "no interpreter there on this machine"
    if not os.access(path, os.X_OK):
        return "a file this user may not execute"
    return None


def check_interpreters(matrix: Matrix, source: str) -> None:
    """Raise a ConfigError when an engine's environment the matrix names (``runtimes.<name>.python``) has no
    interpreter on this machine: before anything launches, not as a server that cannot start."""
    for name, env in matrix.runtimes.items():
        if env.python is None or env.image is not None or name not in matrix.axes.runtime:
            continue
        if (problem := interpreter_problem(env.python)) is not None:
            raise ConfigError(source, f"runtimes.{name}.python", f"{env.python}: {problem}",
                              "install the engine's environment at that path (SGLang's: make setup-sglang), or "
                              "point the key at the interpreter of the environment the engine is installed in "
                              "(an executable file, e.g. .venv-sglang/bin/python)")


def model_dir_problem(model_id: str) -> str | None:
    """What keeps ``model_id`` from serving as a local model directory; None when it is one, or is not a local path
    at all (a hub id, a fixture)."""
    if model_id.startswith(FIXTURE_PREFIX):
        return None
    path = Path(model_id).expanduser()
    if path.is_dir():
        return None if os.access(path, os.R_OK | os.X_OK) else "a directory this user may not read"
    if path.exists():
        return "a file, where a model directory (holding config.json and the weights) is wanted"
    if model_id.startswith(LOCAL_FORMS):
        return "no such directory on this machine"
    return None  # a hub id, downloaded by the engine


def _model_ids(matrix: Matrix) -> Iterator[tuple[str, str]]:
    """(key, id) of every checkpoint a launched server may load."""
    for name, model in matrix.models.items():
        yield f"models.{name}.id", model.id
        for precision, checkpoint in model.checkpoints.items():
            yield f"models.{name}.checkpoints.{precision}", checkpoint


def check_model_dirs(matrix: Matrix, source: str) -> None:
    """Raise a ConfigError for a model or checkpoint given as a local path that is not a directory here."""
    for key, model_id in _model_ids(matrix):
        if (problem := model_dir_problem(model_id)) is not None:
            raise ConfigError(source, key, f"{model_id}: {problem}",
                              "point the key at the model's directory (the one holding config.json), give a hub id "
                              "(org/name) for the engine to download, or a fixture (fixture:<name>)")


__all__ = ["check_interpreters", "check_model_dirs", "interpreter_problem", "model_dir_problem"]
