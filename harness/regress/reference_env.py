"""The engine environments the reference runs with: the installed ones when its lock pins the versions installed,
else its own, built by its own Makefile in their own directories, so an engine upgrade is judged like any change.

The reference's committed lock (``lock/<matrix>.lock.json`` in its tree) records each engine's package and version.
An engine whose lock entry matches what the candidate's environment has installed is reused: the harness's own
virtualenv (vLLM runs from it) by its interpreter, SGLang's separate environment by a link from the reference's tree.
One that differs is built by the reference's Makefile target for it: ``make setup VENV=build/regress/envs/<commit>``
(the whole harness environment: vLLM is installed into it) or ``make setup-sglang`` in the reference's tree.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.plan import Plan
from harness.servers import get_runtime


@dataclass(frozen=True, slots=True)
class EngineSetup:
    """How a reference tree builds one engine's environment: its Makefile target, and the variable naming where."""

    target: str
    variable: str
    harness_env: bool
    """The engine is installed into the harness's own virtualenv (so building it builds the reference's harness env)."""


ENGINE_SETUPS: dict[str, EngineSetup] = {
    "vllm": EngineSetup("setup", "VENV", harness_env=True),
    "sglang": EngineSetup("setup-sglang", "SGLANG_ENV", harness_env=False),
}


@dataclass(frozen=True, slots=True)
class ReferenceEnv:
    python: str
    """The interpreter the reference's harness runs with."""
    notes: tuple[str, ...]
    """Per engine: which version the reference pins and whether the installed environment was reused or built."""


def locked_engines(tree: Path, matrix_name: str) -> dict[str, str]:
    """runtime -> "package==version" from the reference's committed lock (read as plain JSON: the lock schema of
    another revision need not be this one's); empty without a lock."""
    try:
        data = json.loads((tree / "lock" / f"{matrix_name}.lock.json").read_text())
    except (FileNotFoundError, ValueError):
        return {}
    engines = data.get("engines") if isinstance(data, dict) else None
    return {runtime: f"{info.get('package')}=={info.get('package_version')}"
            for runtime, info in (engines or {}).items()
            if isinstance(info, dict) and info.get("package") and info.get("package_version")}


def installed_engines(plan: Plan) -> dict[str, tuple[str, str]]:
    """runtime -> ("package==version" installed, interpreter) for every engine the candidate's plan launches."""
    found: dict[str, tuple[str, str]] = {}
    for group in plan.groups:
        server = group.server
        if server.is_deployment or server.runtime in found:
            continue
        adapter = get_runtime(server.runtime)
        python = adapter.python(server)
        package, version = adapter.installed_package(python)
        found[server.runtime] = (f"{package}=={version}", python)
    return found


def _make(tree: Path, setup: EngineSetup, where: Path, log: Path, extra: tuple[str, ...]) -> None:
    argv = ["make", "-C", str(tree), setup.target, f"{setup.variable}={where}", *extra]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as sink:
        done = subprocess.run(argv, stdout=sink, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise HarnessError(f"building the reference's environment failed ({' '.join(argv)}): see {log}")


def prepare(repo: Path, tree: Path, commit: str, plan: Plan, matrix_name: str, log: Path) -> ReferenceEnv:
    """Choose (and build where needed) the reference's interpreter and engine environments."""
    pinned, installed = locked_engines(tree, matrix_name), installed_engines(plan)
    python, notes = sys.executable, []
    for runtime, (have, engine_python) in installed.items():
        want = pinned.get(runtime)
        setup = ENGINE_SETUPS.get(runtime)
        if want is None or want == have or setup is None:
            why = "its lock pins no version" if want is None else "the version its lock pins" if want == have else \
                f"its lock pins {want}, but this harness cannot build {runtime}'s environment"
            notes.append(f"{runtime}: the installed {have} ({why})")
            if not setup or setup.harness_env:
                continue
            env_dir = Path(engine_python).parents[1]  # <env>/bin/python
            _link_env(repo, tree, env_dir)
            continue
        if setup.harness_env:
            where = repo / "build" / "regress" / "envs" / commit[:12]
            if not (where / ".ready").exists():
                _make(tree, setup, where, log, (f"NSYS_DIR={repo / 'build' / 'nsys'}",))
            python = str(where / "bin" / "python")
        else:
            _make(tree, setup, tree / "build" / "engines" / runtime, log, ())
        notes.append(f"{runtime}: {want}, built for the reference (the candidate has {have})")
    return ReferenceEnv(python, tuple(notes))


def _link_env(repo: Path, tree: Path, env_dir: Path) -> None:
    """The reference reaches an engine environment by the path its matrix names (relative to its tree): link the
    candidate's there when reused."""
    try:
        relative = env_dir.resolve().relative_to(repo.resolve())
    except ValueError:
        return  # an absolute path outside the repository: the same for both sides already
    theirs = tree / relative
    if not theirs.exists() and not theirs.is_symlink():
        theirs.parent.mkdir(parents=True, exist_ok=True)
        theirs.symlink_to(env_dir.resolve(), target_is_directory=True)
