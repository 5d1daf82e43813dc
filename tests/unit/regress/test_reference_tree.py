"""The reference's tree: a revision resolved or refused with its fix, a worktree made once and reused, the matrix
found at that revision, and fixtures seeded as copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.regress.reference_tree import (
    candidate_commit,
    checkout,
    reference_matrix,
    repository_root,
    resolve_revision,
    seed_fixtures,
)

from tests.support.paired_repo import git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "m.yaml").write_text("name: m\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def test_a_revision_resolves_to_its_commit_or_is_refused_with_the_fix(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    assert resolve_revision(repo, "HEAD") == head
    assert repository_root(repo) == repo.resolve()
    with pytest.raises(ConfigError, match="fix: git fetch --unshallow"):
        resolve_revision(repo, "no-such")
    with pytest.raises(ConfigError, match="is not a revision"):
        resolve_revision(repo, "--all")
    with pytest.raises(ConfigError, match="not inside a git repository"):
        repository_root(repo.parent)


def test_the_worktree_is_made_once_and_the_candidate_state_read(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    tree = checkout(repo, head)
    assert tree == repo / "build" / "regress" / "trees" / head[:12]
    assert git(tree, "rev-parse", "HEAD") == head
    (tree / "untracked-marker").write_text("kept")
    assert checkout(repo, head) == tree and (tree / "untracked-marker").exists()  # reused, not remade
    (tree / "m.yaml").write_text("name: edited\n")  # a dirtied checkout is remade from the commit
    assert (checkout(repo, head) / "m.yaml").read_text() == "name: m\n"
    assert candidate_commit(repo) == (head, False)
    (repo / "m.yaml").write_text("name: changed\n")
    assert candidate_commit(repo) == (head, True)


def test_the_matrix_is_the_revisions_own_copy(repo: Path, tmp_path: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    tree = checkout(repo, head)
    (repo / "m.yaml").write_text("name: changed\n")
    assert reference_matrix(repo, tree, repo / "m.yaml", "HEAD").read_text() == "name: m\n"
    (repo / "new.yaml").write_text("name: n\n")
    with pytest.raises(ConfigError, match="new.yaml does not exist at HEAD"):
        reference_matrix(repo, tree, repo / "new.yaml", "HEAD")
    outside = tmp_path / "outside.yaml"
    outside.write_text("name: o\n")
    assert reference_matrix(repo, tree, outside, "HEAD") == outside.resolve()


def test_fixtures_are_seeded_as_copies_never_links(repo: Path, tmp_path: Path) -> None:
    source = tmp_path / "fixtures"
    (source / "tiny").mkdir(parents=True)
    (source / "tiny" / "weights").write_text("w")
    target = seed_fixtures(repo, source)
    copied = target / "tiny" / "weights"
    assert copied.read_text() == "w" and copied.stat().st_ino != (source / "tiny" / "weights").stat().st_ino
    copied.write_text("rebuilt by the reference")
    seed_fixtures(repo, source)  # present already: left as the reference made it
    assert copied.read_text() == "rebuilt by the reference"
    assert (source / "tiny" / "weights").read_text() == "w"
