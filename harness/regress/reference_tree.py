"""The reference of a paired regression check: this repository at a git revision, checked out as a worktree under
``build/regress/trees/<commit>``, with its own harness, matrix, lock and fixtures directory.

A worktree rather than a clone: it shares the repository's objects (a checkout of a few megabytes, in a second), and
git knows it, so ``git worktree prune`` forgets one a ``make clean`` removed. A checkout is made once per commit and
reused by later checks; concurrent checks of one commit wait on a lock file instead of racing git.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

from harness.errors import ConfigError, HarnessError


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)


def repository_root(where: Path) -> Path:
    """The git work tree holding ``where``; ConfigError when it is not in one (a reference needs history)."""
    found = _git(where, "rev-parse", "--show-toplevel")
    if found.returncode != 0:
        raise ConfigError(str(where), "--repo", "is not inside a git repository, so it has no revision to measure "
                          "against", "run from the repository's clone, or pass --repo PATH")
    return Path(found.stdout.strip())


def resolve_revision(repo: Path, revision: str) -> str:
    """The full commit ``revision`` names (a branch, tag, sha, ``HEAD~1``); ConfigError naming the fix when the
    clone does not hold it (a shallow CI clone, a branch not fetched)."""
    if revision.startswith("-"):
        raise ConfigError("--against", "--against", f"{revision!r} is not a revision", "pass a commit, branch or tag")
    found = _git(repo, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
    if found.returncode != 0:
        shallow = _git(repo, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
        raise ConfigError("--against", "--against", f"{revision!r} is no commit of {repo}"
                          + (" (a shallow clone)" if shallow else ""),
                          "git fetch --unshallow (or fetch the branch), or name a commit this clone holds")
    return found.stdout.strip()


def candidate_commit(repo: Path) -> tuple[str | None, bool]:
    """HEAD's commit and whether the work tree differs from it (the candidate is the work tree as it is)."""
    head = _git(repo, "rev-parse", "HEAD")
    status = _git(repo, "status", "--porcelain", "--untracked-files=no")
    return (head.stdout.strip() or None) if head.returncode == 0 else None, bool(status.stdout.strip())


def trees_dir(repo: Path) -> Path:
    return repo / "build" / "regress" / "trees"


def checkout(repo: Path, commit: str) -> Path:
    """The worktree of ``commit`` under ``build/regress/trees``: reused when it is there and clean at that commit,
    else (re)made."""
    root = trees_dir(repo)
    root.mkdir(parents=True, exist_ok=True)
    tree = root / commit[:12]
    with (root / f".{commit[:12]}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two checks of one commit: the second reuses the first's checkout
        if tree.exists() and _git(tree, "rev-parse", "HEAD").stdout.strip() == commit \
                and not _git(tree, "status", "--porcelain", "--untracked-files=no").stdout.strip():
            return tree
        if tree.exists():
            _git(repo, "worktree", "remove", "--force", str(tree))
            shutil.rmtree(tree, ignore_errors=True)
        _git(repo, "worktree", "prune")
        made = _git(repo, "worktree", "add", "--detach", "--force", str(tree), commit)
        if made.returncode != 0:
            raise HarnessError(f"git worktree add {tree} {commit[:12]} failed: {made.stderr.strip()}")
    return tree


def reference_matrix(repo: Path, tree: Path, matrix: Path, revision: str) -> Path:
    """The reference's own copy of the matrix (the same path in its tree); a matrix outside the repository is
    the same file on both sides."""
    try:
        relative = matrix.resolve().relative_to(repo.resolve())
    except ValueError:
        return matrix.resolve()
    theirs = tree / relative
    if not theirs.is_file():
        raise ConfigError(str(matrix), "--against", f"{relative} does not exist at {revision}, so the reference has "
                          "no matrix to run", "commit the matrix first, or name a revision that has it")
    return theirs


def seed_fixtures(tree: Path, source: Path) -> Path:
    """The reference's fixtures directory, seeded with copies of the candidate's fixtures it lacks: its harness then
    finds them fresh when their recipe is unchanged and rebuilds its own copy (never the candidate's) when not."""
    target = tree / "build" / "fixtures"
    target.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        for entry in source.iterdir():
            if entry.is_dir() and not (target / entry.name).exists():
                shutil.copytree(entry, target / entry.name, symlinks=True)
    return target
