"""What each side of a paired check sees as the installed harness: its own tree's entry points, not the
environment's.

A side runs its tree's harness from the shared environment (``PYTHONPATH`` = the tree), but the harness's
registries (runtimes, workload kinds, predictors, executors, fixtures) read entry points from the installed
distribution's metadata, and the environment holds one installed harness: the work tree's. A reference from before
an entry was added then looked up a module its tree does not have (3b70ef0, before the deployments' ``openai``
runtime: ``ModuleNotFoundError: No module named 'harness.servers.openai_endpoint'``), and one from after an entry
was removed would miss one it declares. Each side therefore gets a directory, after its tree on ``PYTHONPATH``,
holding

- ``harness-<version>.dist-info``: the metadata of the tree's own ``pyproject.toml`` (name, version, entry points);
- ``sitecustomize.py``: imported by Python at start-up from the first directory on ``sys.path`` that has one, it
  leaves ``importlib.metadata.distributions()`` (which every revision's registry reads) every distribution but the
  environment's harness, whose place the tree's takes.

The harness of any revision then runs unchanged: nothing in it needs to know it is a side.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from harness.errors import HarnessError
from harness.store import write_atomic

SITECUSTOMIZE = '''"""Written by harness.regress.side_metadata for one side of a paired check: this process's
harness is the one in its tree, so its entry points are the tree's (the dist-info beside this file), not the
installed harness's."""

import importlib.metadata as _metadata
from pathlib import Path as _Path

_HERE = _Path(__file__).resolve().parent
_all = _metadata.distributions


def _distributions(**kwargs):
    for dist in _all(**kwargs):
        path = getattr(dist, "_path", None)
        if (dist.metadata["Name"] or "").lower() == "harness" and (
                path is None or _Path(str(path)).resolve().parent != _HERE):
            continue  # the environment's harness: another revision's entry points
        yield dist


_metadata.distributions = _distributions
'''


def entry_points_text(pyproject: dict[str, object]) -> str:
    """``entry_points.txt`` (the INI format pip writes) of a parsed ``pyproject.toml``'s project table."""
    project = pyproject.get("project")
    groups = project.get("entry-points", {}) if isinstance(project, dict) else {}
    scripts = project.get("scripts", {}) if isinstance(project, dict) else {}
    sections = {**({"console_scripts": scripts} if scripts else {}), **groups}
    return "".join(f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items()) + "\n"
                   for group, entries in sections.items())


def side_site(tree: Path, where: Path) -> Path:
    """Write ``where`` for the harness in ``tree`` (its metadata and the ``sitecustomize.py`` that makes it the one
    the side's process sees) and return it, to follow the tree on the side's ``PYTHONPATH``."""
    source = tree / "pyproject.toml"
    try:
        pyproject = tomllib.loads(source.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise HarnessError(f"{source}: cannot read the harness's metadata for a side of the paired check ({exc}); "
                           "fix: check out a revision whose pyproject.toml declares the harness") from exc
    project = pyproject.get("project", {})
    name, version = project.get("name", "harness"), project.get("version", "0")
    shutil.rmtree(where, ignore_errors=True)  # made afresh: a tree checked out again may declare other entries
    info = where / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    write_atomic(info / "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    write_atomic(info / "entry_points.txt", entry_points_text(pyproject))
    write_atomic(where / "sitecustomize.py", SITECUSTOMIZE)
    return where
