"""Each side of a paired check sees its own tree's harness metadata: its entry points, not the installed harness's
(a reference from before an entry was added would otherwise import a module its tree does not have)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.regress.side_metadata import entry_points_text, side_site

PYPROJECT = """
[project]
name = "harness"
version = "0.0.9"
[project.scripts]
harness = "harness.cli:app"
[project.entry-points."harness.runtimes"]
old = "harness.servers.old:OldRuntime"
[project.entry-points."harness.executors"]
local = "harness.pipeline.executors:LocalRounds"
"""

_SEEN = ("import importlib.metadata as m, json; "
         "print(json.dumps({'runtimes': sorted(e.name for e in m.entry_points(group='harness.runtimes')), "
         "'harnesses': [d.version for d in m.distributions() if d.metadata['Name'] == 'harness'], "
         "'version': m.version('harness')}))")


def test_a_sides_process_sees_its_trees_entry_points_and_no_other_harness(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pyproject.toml").write_text(PYPROJECT)
    site = side_site(tree, tmp_path / "sites" / "ref")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(site)])}
    done = subprocess.run([sys.executable, "-P", "-c", _SEEN], env=env, capture_output=True, text=True, timeout=60,
                          check=True)
    seen = json.loads(done.stdout)
    # the installed harness declares vllm, sglang, openai, fake: none of them is seen, only the tree's one runtime
    assert seen == {"runtimes": ["old"], "harnesses": ["0.0.9"], "version": "0.0.9"}
    without = subprocess.run([sys.executable, "-P", "-c", _SEEN], capture_output=True, text=True, timeout=60,
                             check=True, env={**os.environ, "PYTHONPATH": str(tree)})
    assert "vllm" in json.loads(without.stdout)["runtimes"]  # what a side saw before: the environment's entries


def test_the_entry_points_file_is_the_pyprojects_groups_and_scripts() -> None:
    text = entry_points_text(tomllib.loads(PYPROJECT))
    assert text == ("[console_scripts]\nharness = harness.cli:app\n\n[harness.runtimes]\n"
                    "old = harness.servers.old:OldRuntime\n\n[harness.executors]\n"
                    "local = harness.pipeline.executors:LocalRounds\n\n")


def test_a_tree_without_a_readable_pyproject_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="pyproject.toml.*fix:"):
        side_site(tmp_path, tmp_path / "site")
