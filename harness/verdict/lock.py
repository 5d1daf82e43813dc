"""The reproducibility lock: what a run ran on, written as ``lock/<matrix>.lock.json`` and compared for drift.

A lock records the harness (version, git commit, dirty tree), the machine (CPU model and cores from
/proc/cpuinfo, or GPU name, count and driver through NVML: ``harness.host``), each runtime's engine package version and
the version its server printed (which packages, and how the version line reads, its adapter declares), every model's
revision with hashes of its config, tokenizer and (for local checkpoints up to ``HASH_WEIGHTS_MAX_BYTES``, i.e. the
project's fixtures) weights, the matrix's hash, the seeds, and every server's full command line. Paths under the
repository and the server's port are normalised to ``<repo>`` and ``<port>``, so a clone elsewhere does not drift for
that alone.

This module reads what is already on disk (server logs, model directories) and the environment; it launches
nothing. ``drift`` compares two locks field by field and says plainly what changed; drift is information, not
an error: the gate decides what it means.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness.host import HardwareInfo, hardware_info
from harness.plan.cells import Plan, ServerConfig
from harness.servers.runtime import resolve_checkpoint, resolve_model_path
from harness.servers.runtime_lookup import get_runtime, launch_spec
from harness.servers.self_description import read_self_description
from harness.store import Store, now_iso, write_atomic
from harness.stored_files import load_or_refuse

REPO_ROOT = Path(__file__).resolve().parents[2]
HASH_WEIGHTS_MAX_BYTES = 2 * 2**30
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "vocab.json", "merges.txt")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HarnessInfo(_Model):
    version: str
    commit: str | None
    dirty: bool | None


class EngineInfo(_Model):
    package: str | None
    package_version: str | None
    python: str
    container: str | None = None
    """Image digest when the runtime runs from a container; None: it runs from ``python``."""


class ModelInfo(_Model):
    id: str
    revision: str | None
    local: bool
    config_sha256: str | None
    tokenizer_sha256: str | None
    weights_sha256: dict[str, str]
    note: str | None = None


class ServerInfo(_Model):
    label: str
    runtime: str
    command: str
    command_source: str
    """``log`` (the command the server was launched with) or ``planned`` (never launched in this store)."""
    server_version: str | None


class DeploymentInfo(_Model):
    """A deployment as the run reached it: where, as what, what its owner declared, what its server said (no
    secret: the key's variable is named, never its value)."""

    base_url: str
    runtime: str
    served_model: str
    api_key_env: str | None
    tls_verify: bool | str
    declared: dict[str, Any]
    declared_labels: dict[str, str] = {}
    self_description: dict[str, Any] | None
    """``harness.servers.self_description.SelfDescription`` as stored at the start of the run (None: not read)."""


class Lock(_Model):
    schema_version: int = 1
    created_at: str
    matrix: str
    matrix_sha256: str
    harness: HarnessInfo
    hardware: HardwareInfo
    engines: dict[str, EngineInfo]
    models: dict[str, ModelInfo]
    seeds: dict[str, int]
    servers: dict[str, ServerInfo]
    deployments: dict[str, DeploymentInfo] = {}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sha256_files(paths: Iterable[Path]) -> str | None:
    present = [p for p in paths if p.is_file()]
    if not present:
        return None
    digest = hashlib.sha256()
    for path in present:
        digest.update(f"{path.name}:{sha256_file(path)}\n".encode())
    return digest.hexdigest()


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def harness_info() -> HarnessInfo:
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return HarnessInfo(version=importlib.metadata.version("harness"),
                       commit=commit, dirty=bool(status) if status is not None else None)


def _normalise(command: str) -> str:
    command = re.sub(r"(--port[ =])\d+", r"\1<port>", command)
    return command.replace(str(REPO_ROOT), "<repo>")


def _logged_command(log: Path) -> str | None:
    try:
        with log.open(errors="replace") as fh:
            first = fh.readline()
    except OSError:
        return None
    return first[2:].strip() if first.startswith("$ ") else None


def server_version(runtime: str, log: Path) -> str | None:
    """The version the server printed in its log, by its adapter's patterns (None: it printed none we know)."""
    patterns = get_runtime(runtime).server_version_patterns
    if not patterns or not log.is_file():
        return None
    text = _ANSI.sub("", log.read_text(errors="replace"))
    return next((m.group(1) for pattern in patterns if (m := pattern.search(text))), None)


def deployment_info(server: ServerConfig, store: Store) -> DeploymentInfo:
    deployment, name = server.deployment, server.deployment_name
    assert deployment is not None and name is not None
    said = read_self_description(store.deployment_path(name))
    return DeploymentInfo(base_url=deployment.base_url, runtime=server.runtime, served_model=deployment.served_model,
                          api_key_env=deployment.api_key_env,
                          tls_verify=deployment.tls.ca_bundle or deployment.tls.verify,
                          declared=deployment.declared.declared(), declared_labels=deployment.declared.labels(),
                          self_description=said.model_dump(mode="json") if said is not None else None)


def server_info(server: ServerConfig, store: Store) -> ServerInfo:
    if server.deployment is not None:
        said = read_self_description(store.deployment_path(str(server.deployment_name)))
        return ServerInfo(label=server.label, runtime=server.runtime, command_source="deployment",
                          command=f"not launched: deployment {server.deployment_name} at {server.deployment.base_url}",
                          server_version=said.revealed.version if said is not None else None)
    log = store.server_log(server.server_id)
    command = _logged_command(log)
    source = "log"
    if command is None:
        spec = launch_spec(server, 0)
        command, source = " ".join(spec.argv), "planned"
    return ServerInfo(label=server.label, runtime=server.runtime, command=_normalise(command), command_source=source,
                      server_version=server_version(server.runtime, log))


def model_info(model_id: str, revision: str | None, path: str) -> ModelInfo:
    folder = Path(path)
    if not folder.is_dir():
        return ModelInfo(id=model_id, revision=revision, local=False, config_sha256=None, tokenizer_sha256=None,
                         weights_sha256={}, note="not local: the revision pins it" if revision else
                         "not local and no revision pinned: set models.<name>.revision")
    weights = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    size = sum(p.stat().st_size for p in weights)
    hashed = size <= HASH_WEIGHTS_MAX_BYTES
    return ModelInfo(
        id=model_id, revision=revision, local=True, config_sha256=_sha256_files([folder / "config.json"]),
        tokenizer_sha256=_sha256_files(folder / name for name in TOKENIZER_FILES),
        weights_sha256={str(p.relative_to(folder)): sha256_file(p) for p in weights} if hashed else {},
        note=None if hashed else f"weights not hashed: {size / 2**30:.1f} GiB over the hashing limit")


_LATER_IN_SECTIONS = ("estimate", "axes")
"""Matrix sections whose own ``_added_later`` fields joined after shas of them were committed (``server``'s later
fields were hashed from the start, so they stay in)."""


def matrix_sha256(plan: Plan) -> str:
    # sections added later (the model's _added_later) hash only when set: a matrix that does not use them keeps
    # the sha its baseline has
    matrix = plan.matrix
    exclude: dict[str, Any] = {name: True for name in matrix._added_later
                               if getattr(matrix, name) == type(matrix).model_fields[name].get_default(
                                   call_default_factory=True)}
    for name in _LATER_IN_SECTIONS:  # and the later fields of sections hashed whole before
        section = getattr(matrix, name)
        if isinstance(section, BaseModel):
            later = {f for f in getattr(section, "_added_later", ())
                     if getattr(section, f) == type(section).model_fields[f].get_default(call_default_factory=True)}
            if later:
                exclude[name] = dict.fromkeys(later, True)
    return hashlib.sha256(matrix.model_dump_json(exclude=exclude).encode()).hexdigest()


def build_lock(plan: Plan, store: Store) -> Lock:
    """The lock of this environment and of the run stored for ``plan`` (planned commands for unrun servers)."""
    matrix = plan.matrix
    engines = {}
    for runtime in dict.fromkeys(g.server.runtime for g in plan.groups if not g.server.is_deployment):
        adapter = get_runtime(runtime)
        python = adapter.python(next(g.server for g in plan.groups if g.server.runtime == runtime))
        package, version = adapter.installed_package(python)
        engines[runtime] = EngineInfo(package=package, package_version=version, python=_normalise(python))
    models: dict[str, ModelInfo] = {}
    for group in plan.groups:
        server = group.server
        model_id = server.model.checkpoints.get(server.precision.weights, server.model.id)
        if model_id not in models:
            models[model_id] = model_info(model_id, server.model.revision, resolve_model_path(server))
        drafter = server.speculation.draft_model  # a drafter is a checkpoint the run depends on too
        if drafter and drafter not in models:
            models[drafter] = model_info(drafter, None, resolve_checkpoint(drafter))
    seeds = {"server.seed": matrix.server.seed,
             **{f"workloads.{name}.seed": matrix.workloads[name].seed for name in matrix.workload_names()}}
    return Lock(created_at=now_iso(), matrix=matrix.name, matrix_sha256=matrix_sha256(plan), harness=harness_info(),
                hardware=hardware_info(), engines=engines, models=models, seeds=seeds,
                servers={g.server.server_id: server_info(g.server, store) for g in plan.groups},
                deployments={str(g.server.deployment_name): deployment_info(g.server, store) for g in plan.groups
                             if g.server.is_deployment})


def write_lock(lock: Lock, path: Path) -> Path:
    write_atomic(path, lock.model_dump_json(indent=2) + "\n")
    return path


def read_lock(path: Path) -> Lock | None:
    """The lock at ``path``; None when there is none; a ``StoredFileError`` naming it and the fix when it cannot
    be read or is damaged (a run's ``lock.json`` is written again by ``harness report``)."""
    return load_or_refuse(path, Lock.model_validate_json, "lock file",
                          f"move it aside (mv {path} {path}.damaged), then `harness report MATRIX` writes a run's "
                          "lock.json again and `harness lock MATRIX --update` the committed one (or restore it from "
                          "git)")


@dataclass(frozen=True, slots=True)
class Drift:
    """One field that differs between a committed lock and the current environment."""

    field: str
    locked: Any
    current: Any


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def _unknown_yet(key: str, current: Any) -> bool:
    # A server not launched in this store has a planned command and no version yet: unknown is not drift.
    return key.startswith("servers.") and (current is None or key.endswith(".command_source"))


def drift(locked: Lock, current: Lock) -> list[Drift]:
    """Every field that differs, by dotted path (``created_at`` excluded: it always does)."""
    old = _flatten(json.loads(locked.model_dump_json(exclude={"created_at"})))
    new = _flatten(json.loads(current.model_dump_json(exclude={"created_at"})))
    return [Drift(key, old.get(key), new.get(key)) for key in sorted(old.keys() | new.keys())
            if old.get(key) != new.get(key) and not _unknown_yet(key, new.get(key))]
