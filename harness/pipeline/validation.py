"""One validation pass, shared by every command that reads a matrix, before any fixture is built or any process
started: the matrix file (strict models) → the engines and model families it names (their adapters) → expansion →
the recipe rules (errors, or skips the plan lists) → each engine adapter's own checks → the gated metrics → the
executor the command line asks for → the parity suite (BFCL's sample, the reference precision, the parsers) → one
request of every workload whose model's tokenizer is on disk → what this machine cannot drive at all
(``harness.analysis.sanity``; its warnings are the plan's and the run's to print) → the executor's preflight (Slurm
commands, partitions).

``harness plan``, ``run`` and ``compare`` call ``validate`` and so refuse a bad matrix with the same message and
exit 2; each check's message is written once, by its owner. Commands that only read stored results (``report``,
``gate``, ``lock``, ``baseline``) need the plan, not a launch, and call ``load_plan``.

What cannot be checked before a build is checked by the same function after it: a fixture's tokenizer exists only
once the fixture is built, so its workloads are planned again by ``run_plan`` when the build is done
(``deferred_workloads`` names them, and ``harness plan`` says so).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.analysis import implausible
from harness.config import SlurmExecutor, executor_models, load_matrix
from harness.errors import ConfigError
from harness.history import check_history
from harness.load import WORKLOAD_KINDS, make_requests
from harness.parity import check_parity_suite
from harness.pipeline.executors import EXECUTORS, make_executor
from harness.pipeline.launch import tokenizer_dir
from harness.plan import Cell, Plan, expand, vet
from harness.servers import check_engines, check_interpreters, check_model_dirs, deployment_grants, get_runtime
from harness.store import Store
from harness.verdict import check_gate_metrics


def load_plan(path: Path) -> Plan:
    """Load the matrix, expand it and let the recipe rules and every runtime adapter vet it: what a command that
    reads stored results needs. Every problem is a ConfigError naming the file, the key and the fix."""
    source = str(path)
    # a declared workload kind's or executor's settings model registers as its module is imported: before the read
    WORKLOAD_KINDS.entries()
    EXECUTORS.entries()
    matrix = load_matrix(path)
    check_engines(matrix, source)
    plan = expand(matrix, source=source)
    if plan.matrix.unsupported == "skip":
        plan = vet(plan, source, get_runtime)
    for group in plan.groups:
        get_runtime(group.server.runtime).check(group.server, source)
    check_gate_metrics(plan.matrix.gates, source)
    return plan


def with_executor(plan: Plan, kind: str | None, max_parallel: int | None) -> Plan:
    """The plan with the command line's executor: its kind (keeping the matrix's Slurm settings when it names
    slurm too) and the Slurm parallelism cap."""
    spec = plan.matrix.executor
    if kind is not None and kind != spec.kind:
        models = executor_models()
        if kind not in models:
            raise ConfigError("--executor", "executor", f"unknown executor {kind!r}",
                              f"pass one of: {', '.join(models)}")
        spec = models[kind](kind=kind)
    if max_parallel is not None:
        if not isinstance(spec, SlurmExecutor):
            raise ConfigError("--max-parallel", "executor.max_parallel", "--max-parallel applies to the slurm "
                              "executor only", "pass --executor slurm too, or drop --max-parallel")
        spec = spec.model_copy(update={"max_parallel": max_parallel})
    return dataclasses.replace(plan, matrix=plan.matrix.model_copy(update={"executor": spec}))


def _workload_models(plan: Plan) -> dict[tuple[str, str], Cell]:
    """One cell per (workload, model): what planning a request of every workload on every model needs."""
    found: dict[tuple[str, str], Cell] = {}
    for cell in plan.cells:
        found.setdefault((cell.workload_name, cell.server.model_name), cell)
    return found


def deferred_workloads(plan: Plan) -> list[str]:
    """The (workload on model) checks that wait for a tokenizer not on disk yet (a fixture still to build)."""
    return [f"{workload} on {model}" for (workload, model), cell in _workload_models(plan).items()
            if tokenizer_dir(cell.server) is None]


def check_workloads(plan: Plan, source: str, *, deferred_only: bool = False) -> None:
    """Plan one request of every workload on every model whose tokenizer is on disk: an unreachable dataset or a
    trace that does not parse is a ConfigError now, not after a server spent minutes starting. With
    ``deferred_only``, the ones ``deferred_workloads`` named (their fixture is built now)."""
    for (workload, model), cell in _workload_models(plan).items():
        on_disk = tokenizer_dir(cell.server)
        if (on_disk is None) != deferred_only:
            continue
        try:
            planned = make_requests(cell.workload, 1, on_disk)
        except ConfigError as exc:
            raise _in_matrix(exc, source, workload, model) from exc
        if planned and not isinstance(planned[0].prompt, str) and planned[0].api == "completions":
            _check_routers_take_ids(plan, source, workload, model)


def _check_routers_take_ids(plan: Plan, source: str, workload: str, model: str) -> None:
    """A workload that sends token ids to /v1/completions, served behind a router that refuses them."""
    for cell in plan.cells:
        runtime = get_runtime(cell.server.runtime)
        mine = (cell.workload_name, cell.server.model_name) == (workload, model)
        if mine and not cell.server.topology.is_colocated and not runtime.router_takes_ids:
            raise ConfigError(source, f"workloads.{workload}.api", f"{runtime.router_module} refuses token-id "
                              f"prompts on /v1/completions, which this workload sends ({cell.server.label}: 422, "
                              "'prompt: data did not match any variant of untagged enum StringOrArray')",
                              f"set workloads.{workload}.api: chat (text that re-encodes to the same lengths)")


def _in_matrix(exc: ConfigError, source: str, workload: str, model: str) -> ConfigError:
    """A prompt maker's error restated against the matrix: its file and key path first, then the data file (a
    dataset, a trace, a tokenizer) and the place in it that the maker named."""
    if exc.source == "model" or exc.key == "tokenizer.json":
        section, detail = f"models.{model}.id", "" if exc.source == "model" else f"{exc.source}: "
    else:
        field = exc.key if exc.key.isidentifier() else "path"
        section = f"workloads.{workload}.{field}"
        place = "" if exc.key.isidentifier() or not exc.key else f" ({exc.key})"
        detail = "" if exc.source == "workload" else f"{exc.source}{place}: "
    return ConfigError(source, section, detail + exc.problem, exc.fix)


def check_deployments(plan: Plan, source: str) -> None:
    """What a deployment needs before anything is sent to it: its key's variable set, its CA bundle on disk, and a
    local executor (a deployment is measured from here; a Slurm job launches servers)."""
    deployments = [g.server for g in plan.groups if g.server.deployment is not None]
    if not deployments:
        return
    deployment_grants(deployments, source)  # raises when a named key variable is unset
    for server in deployments:
        assert server.deployment is not None
        bundle = server.deployment.tls.ca_bundle
        if bundle is not None and not Path(bundle).is_file():
            raise ConfigError(source, f"deployments.{server.deployment_name}.tls.ca_bundle", f"{bundle}: no such "
                              "file", "give the PEM file of the CA that signed the server's certificate")
    if plan.matrix.executor.kind != "local":
        raise ConfigError(source, "executor", "deployments are measured from this machine, and the "
                          f"{plan.matrix.executor.kind} executor runs server groups elsewhere",
                          "measure the deployments in a matrix of their own with executor: {kind: local}, or run "
                          "this one with --executor local")


def preflight(plan: Plan, store: Store, source: str) -> None:
    """What the plan's executor cannot run (Slurm commands, partitions, multi-node flags), before any submission."""
    make_executor(plan, store, source).preflight()


def check_store_history(store: Store) -> None:
    """The run's results history opens (``harness.history.check_history``), before anything launches."""
    check_history(store.history_url)


def validate(path: Path, *, out: Path = Path("reports"), lock_dir: Path = Path("lock"), executor: str | None = None,
             max_parallel: int | None = None, cluster_pending: bool = False, launching: bool = False) -> Plan:
    """Every check a launch needs, in one pass, before anything is built or started. ``cluster_pending``: the
    command starts its own Slurm cluster later, so the preflight runs once it is up (``preflight``).
    ``launching``: the command launches servers here, so every engine environment the matrix names must be
    installed (``harness plan`` only prints their commands, and plans before setup installs them)."""
    plan = with_executor(load_plan(path), executor, max_parallel)
    source = str(path)
    try:
        check_parity_suite(plan)
    except ConfigError as exc:  # the parity checks name the key; the file is this one
        if exc.source != "matrix":
            raise
        raise ConfigError(source, exc.key, exc.problem, exc.fix) from exc
    check_workloads(plan, source)
    check_deployments(plan, source)
    for finding in implausible(plan):
        if finding.error:
            raise ConfigError(source, finding.key, finding.problem, finding.fix)
    if launching and plan.matrix.executor.kind == "local":
        check_interpreters(plan.matrix, source)
        check_model_dirs(plan.matrix, source)
    if not cluster_pending:
        preflight(plan, Store(out, plan.matrix.name, lock_dir), source)
    return plan
