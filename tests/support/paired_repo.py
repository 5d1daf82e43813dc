"""A small git repository for paired regression checks: this harness's packages and pyproject.toml copied in and
committed with a matrix, so a check ``--against HEAD`` runs the committed copy as its reference (in a worktree under
the repository's ``build/``) and the work tree's copy as its candidate, without touching this clone's history."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import harness
import harness_testing

_IDENTITY = ["-c", "user.name=harness tests", "-c", "user.email=tests@harness.invalid", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *_IDENTITY, *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def paired_repo(root: Path, matrix_text: str, name: str = "m.yaml") -> tuple[Path, Path, str]:
    """(repository, its matrix, the commit holding both) under ``root``."""
    repo = root / "repo"
    repo.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in (harness, harness_testing):
        source = Path(str(package.__file__)).parent
        shutil.copytree(source, repo / source.name, ignore=ignore)
    # its metadata too: each side's registries read the entry points its own tree's pyproject.toml declares
    shutil.copy(Path(str(harness.__file__)).parent.parent / "pyproject.toml", repo / "pyproject.toml")
    (repo / "lock").mkdir()
    (repo / ".gitignore").write_text("build/\n")
    matrix = repo / name
    matrix.write_text(matrix_text)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "reference")
    return repo, matrix, git(repo, "rev-parse", "HEAD")
