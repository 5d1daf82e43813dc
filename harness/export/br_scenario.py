"""A Benchmark Report's ``scenario``: the inference engine a cell ran on (``stack``) and the load the harness drove
it with (``load``).

The stack has one ``inference_engine`` component per role: one for a colocated server or replicas behind the
engine's router, a ``prefill`` and a ``decode`` one for a disaggregated deployment. Each names the engine, the
version the lock recorded (the engine package's, else the one its server printed; empty when the run has no lock),
the served checkpoint, the machine's accelerator (the lock's name for it; a CPU server has none and counts 0) and
the parallelism. ``native`` keeps the server's full command line as the lock recorded it, its flags parsed, the
extra environment, and the harness's whole server configuration, precision (the quantization) included.

The load names the harness as the load generator, the lengths it sent (from the measured records: ``fixed`` when
every request had the same length, else ``other`` with the mean, spread and range; the stored totals' mean when no
records are stored), the output length when the workload enforces it (``ignore_eos``), the sessions of a multi-turn
workload, the request rate and the concurrency; ``native`` keeps the workload's own configuration.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections import Counter
from collections.abc import Sequence
from typing import Literal

import numpy as np

from harness.config.hardware import GpuHardware
from harness.config.topology import Disaggregated
from harness.export.benchmark_report import (
    Component,
    ComponentMetadata,
    ComponentNative,
    InferenceEngine,
    InferenceEngineAccelerator,
    InferenceEngineModel,
    InferenceEngineParallelism,
    Load,
    LoadMetadata,
    LoadNative,
    LoadStandardized,
    MultiTurn,
    Scenario,
    SequenceLength,
)
from harness.export.stored_cell import StoredCell
from harness.plan import ServerConfig

LOAD_GENERATOR = "harness"
Source = Literal["random", "sampled", "unknown"]
Role = Literal["replica", "prefill", "decode"]
LOAD_SOURCES: dict[str, Source] = {"random": "random", "trace": "random", "dataset": "sampled"}
"""How a built-in workload kind makes its prompts, in the report's words (random token ids, or prompts sampled from
a dataset); any other kind is ``unknown``."""


def _digest(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


def _present(values: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in values.items() if value is not None}


def command_flags(command: str) -> dict[str, object]:
    """The flags of a command line as llm-d's reports write native args: ``--flag value`` and ``--flag=value`` as
    ``{"--flag": "value"}``, a flag without a value as ``None``, a repeated flag as the list of its values. The words
    before the first flag (executable, subcommand, model) stay in the full command only."""
    values: dict[str, list[str | None]] = {}
    pending: str | None = None
    for word in shlex.split(command):
        if word.startswith("--"):
            name, has_value, value = word.partition("=")
            values.setdefault(name, []).append(value if has_value else None)
            pending = None if has_value else name
        elif pending is not None:
            values[pending][-1] = word
            pending = None
    return {name: found[0] if len(found) == 1 else found for name, found in values.items()}


def _roles(server: ServerConfig) -> tuple[tuple[Role, int], ...]:
    root = server.topology.root
    if isinstance(root, Disaggregated):
        return (("prefill", root.prefill), ("decode", root.decode))
    return (("replica", server.topology.parts),)


def _checkpoint(server: ServerConfig) -> str:
    """The checkpoint served: the one the matrix maps the weight precision to, else the model's own; a
    deployment's served model id (what it serves is its own)."""
    if server.deployment is not None:
        return server.deployment.served_model
    return server.model.checkpoints.get(server.precision.weights, server.model.id)


def _native(stored: StoredCell) -> ComponentNative:
    server, lock = stored.cell.server, stored.run.lock
    logged = lock.servers.get(server.server_id) if lock else None
    engine = lock.engines.get(server.runtime) if lock else None
    checkpoint = _checkpoint(server)
    model = lock.models.get(checkpoint) if lock else None
    config = _present({
        "command": logged.command if logged else None,
        "command_source": logged.command_source if logged else None,
        "server_version": logged.server_version if logged else None,
        "engine_package": (" ".join(filter(None, (engine.package, engine.package_version))) or None) if engine
        else None,
        "container": engine.container if engine else None,
        "model": _present({"id": server.model.id, "checkpoint": checkpoint, "revision": model.revision if model
                           else server.model.revision, "weights": server.precision.weights,
                           "kv_cache_dtype": server.precision.kv_cache}),
        "server_config": server.model_dump(mode="json"),
        "deployment": _deployment(stored),
    })
    return ComponentNative(args=command_flags(logged.command) if logged else None,
                           envars=dict(server.runtime_env.env) or None, config=config)


def _deployment(stored: StoredCell) -> dict[str, object] | None:
    """A deployment's recipe as its owner declared it (never launched: ``declared``), with what its server said
    about each value (``verification``: agrees, contradicts, not verified), from the lock; None for a launched
    server."""
    server, lock = stored.cell.server, stored.run.lock
    if server.deployment is None:
        return None
    found = lock.deployments.get(str(server.deployment_name)) if lock else None
    said = found.self_description if found else None
    checks = said.get("checks", []) if isinstance(said, dict) else []
    return {"name": server.deployment_name, "base_url": server.deployment.base_url, "launched_by_harness": False,
            "declared": server.deployment.declared.declared(),
            "verification": {c["fact"]: c["status"] for c in checks if isinstance(c, dict)}}


def stack(stored: StoredCell) -> tuple[Component, ...]:
    server, lock = stored.cell.server, stored.run.lock
    hardware = server.hardware
    engine = lock.engines.get(server.runtime) if lock else None
    logged = lock.servers.get(server.server_id) if lock else None
    version = (engine.package_version if engine else None) or (logged.server_version if logged else None) or ""
    if isinstance(hardware, GpuHardware):
        here = lock is not None and lock.hardware.kind == "gpu" and not server.is_deployment
        accelerator, per_replica = (lock.hardware.name if here and lock else hardware.gpu, hardware.gpus_per_replica)
    elif server.is_deployment:  # not this machine's: the matrix names no accelerator for it
        accelerator, per_replica = "cpu", 0
    else:
        accelerator, per_replica = (lock.hardware.name if lock else "cpu"), 0
    parallel = server.parallel
    roles = _roles(server)
    native = _native(stored)
    return tuple(Component(
        metadata=ComponentMetadata(label=f"{server.runtime}-{server.server_id}" + (f"-{role}" if len(roles) > 1
                                                                                   else ""),
                                   cfg_id=server.server_id, description=server.label + (
                                       " (deployment: not launched by the harness; its recipe is declared, see "
                                       "native.config.deployment)" if server.is_deployment else "")),
        standardized=InferenceEngine(
            tool=server.runtime, tool_version=version, role=role, replicas=replicas,
            model=InferenceEngineModel(name=_checkpoint(server)),
            accelerator=InferenceEngineAccelerator(
                model=accelerator, count=per_replica * replicas,
                parallelism=InferenceEngineParallelism(tp=parallel.tp, dp=parallel.dp, ep=parallel.ep))),
        native=native) for role, replicas in roles)


def sequence_length(lengths: Sequence[int]) -> SequenceLength | None:
    """``fixed`` when every length is the same, else ``other`` with the mean, spread and range; None for none."""
    if not lengths:
        return None
    values = np.asarray(lengths, dtype=float)
    low, high = int(values.min()), int(values.max())
    if low == high:
        return SequenceLength(distribution="fixed", value=low)
    return SequenceLength(distribution="other", value=float(values.mean()), std_dev=float(values.std()), min=low,
                          max=high)


def _source(kind: str) -> Source:
    return LOAD_SOURCES.get(kind, "unknown")


def _input_lengths(stored: StoredCell) -> SequenceLength | None:
    done = [r for r in stored.records if r.ok]
    if done:
        return sequence_length([r.prompt_tokens if r.prompt_tokens is not None else r.input_tokens for r in done])
    s = stored.summary
    # no records stored: the totals give the mean, and nothing about the shape
    return SequenceLength(distribution="other", value=s.total_input_tokens / s.completed) if s.completed else None


def _multi_turn(stored: StoredCell) -> MultiTurn | None:
    turns = Counter(r.session for r in stored.records if r.session is not None)
    return MultiTurn(max_turns=sequence_length(list(turns.values()))) if turns else None


def load(stored: StoredCell) -> Load | None:
    """The load, or None when not even the prompts' mean length is known (no records, nothing completed)."""
    cell, lock = stored.cell, stored.run.lock
    input_len = _input_lengths(stored)
    if input_len is None:
        return None
    output_len = sequence_length([r.output_tokens for r in stored.records if r.ok]) if cell.workload.ignore_eos \
        else None
    args = _present({"workload": cell.workload_name, "concurrency": cell.concurrency, "repeats": cell.repeats,
                     "min_measured_s": cell.min_measured_s, **cell.load.model_dump(mode="json")})
    return Load(
        metadata=LoadMetadata(cfg_id=_digest({"workload": cell.workload.identity(), **args}),
                              description=cell.workload_name),
        standardized=LoadStandardized(
            tool=LOAD_GENERATOR, tool_version=lock.harness.version if lock else "",
            source=_source(cell.workload.kind),
            input_seq_len=input_len, output_seq_len=output_len, multi_turn=_multi_turn(stored),
            rate_qps=cell.load.request_rate, concurrency=cell.concurrency),
        native=LoadNative(args=args, config=cell.workload.model_dump(mode="json")))


def scenario(stored: StoredCell) -> Scenario:
    return Scenario(stack=stack(stored), load=load(stored))
