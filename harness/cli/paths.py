"""Every path a user passes on the command line, checked before anything launches or is written.

A matrix path must be a readable file; ``--out`` and ``--dest`` a directory the harness may write (made if missing,
under a parent it may write); ``--lock-dir`` a directory it may read (missing: nothing committed yet); a
``--history sqlite:///FILE`` a file it may write, not a directory. Each check is a typer callback on the argument
types that every command shares (``harness.cli.app``), so a file where a directory is wanted, a directory where a
file is wanted, no permission or a parent that is a file ends every command alike: exit 2, naming the option, the
path and the fix (``PathRefused``). The ``*_problem`` functions say what is wrong, or None; they are pure reads.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from harness.errors import PathRefused


def _existing_ancestor(path: Path) -> Path:
    """The nearest of ``path``'s ancestors that exists (the directory a missing path would be made in)."""
    for parent in path.absolute().parents:
        if parent.exists():
            return parent
    return Path("/")


def _creatable(path: Path, what: str) -> str | None:
    """Why a missing ``path`` cannot be made (a file in its way, no permission); None when it can."""
    ancestor = _existing_ancestor(path)
    if not ancestor.is_dir():
        return f"{ancestor} is a file, so no {what} can be made under it"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"it does not exist, and {ancestor} may not be written by this user to make it"
    return None


def directory_problem(path: Path, *, write: bool) -> str | None:
    """What keeps ``path`` from serving as a directory the harness reads (and writes, when ``write``)."""
    if path.exists() and not path.is_dir():
        return "a file, where a directory is wanted"
    if not path.exists():
        return _creatable(path, "directory") if write else (
            None if _existing_ancestor(path).is_dir() else f"{_existing_ancestor(path)} is a file, not a directory")
    wanted = os.R_OK | os.X_OK | (os.W_OK if write else 0)
    if not os.access(path, wanted):
        return f"this user may not {'write' if write else 'read'} it"
    return None


def file_problem(path: Path, *, write: bool) -> str | None:
    """What keeps ``path`` from serving as a file the harness reads (``write``: writes, made if missing)."""
    if path.is_dir():
        return "a directory, where a file is wanted"
    if not path.exists():
        return _creatable(path, "file") if write else "no such file"
    if not os.access(path, os.R_OK | (os.W_OK if write else 0)):
        return f"this user may not {'write' if write else 'read'} it"
    return None


def _refuse(option: str, path: object, problem: str, fix: str) -> None:
    # the same exit as ``harness.cli.app.fail`` (which imports this module for its argument types)
    refused = PathRefused(f"{option} {path}: {problem}\n  fix: {fix}")
    typer.echo(f"error: {refused}", err=True)
    raise typer.Exit(2)


def matrix_file(value: Path) -> Path:
    if (problem := file_problem(value, write=False)) is not None:
        _refuse("matrix", value, problem, "pass a matrix YAML file this user may read, e.g. matrices/default.yaml")
    return value


def out_dir(value: Path) -> Path:
    if (problem := directory_problem(value, write=True)) is not None:
        _refuse("--out", value, problem, "pass a directory this user may write (it is made if missing), or "
                "remove what is in the way")
    return value


def dest_dir(value: Path | None) -> Path | None:
    if value is not None and (problem := directory_problem(value, write=True)) is not None:
        _refuse("--dest", value, problem, "pass a directory this user may write (it is made if missing); "
                "nothing was written")
    return value


def lock_dir(value: Path) -> Path:
    if (problem := directory_problem(value, write=False)) is not None:
        _refuse("--lock-dir", value, problem, "pass the directory of the committed locks and baselines (lock/)")
    return value


def baseline_file(value: Path | None) -> Path | None:
    """A missing baseline is a verdict of its own (the gate says there is none); the wrong kind is refused."""
    if value is not None and (problem := file_problem(value, write=False)) not in (None, "no such file"):
        _refuse("--baseline", value, problem, "pass a baseline file `harness baseline` wrote "
                "(lock/<matrix>.baseline.json)")
    return value


def history_url(value: str | None) -> str | None:
    """A ``sqlite:///FILE`` history's file must be one this user may write; other URLs are checked on opening."""
    if value is None or "://" not in value:  # not a URL (`none`, a typo): SQLAlchemy could not parse it either
        return value
    from sqlalchemy.engine import make_url  # imported only for a URL: SQLAlchemy is a large import
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(value)
    except ArgumentError:
        return value  # the history's own check names a malformed URL and its fix
    database = parsed.database
    if parsed.get_backend_name() == "sqlite" and database and database != ":memory:":
        if (problem := file_problem(Path(database), write=True)) is not None:
            _refuse("--history", value, f"{database}: {problem}", "pass sqlite:///FILE with a file this user may "
                    "write (its directory is made if missing), or --history none")
    return value


__all__ = ["baseline_file", "dest_dir", "directory_problem", "file_problem", "history_url", "lock_dir",
           "matrix_file", "out_dir"]
