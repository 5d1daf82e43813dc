"""A plan as text for ``harness plan``: each launch with its exact command, the cells it serves, what the rules
skipped or could not check, and the estimated GPU-hours and dollars of the whole run."""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Mapping
from pathlib import Path

from harness.analysis.cost import ReplicaPrice, load_price_table, replica_price, usd_per_mtok
from harness.analysis.estimate import estimate, group_estimate, render_estimate
from harness.analysis.sanity import implausible
from harness.cluster.placement import Placement
from harness.cluster.shape import job_shape
from harness.config.executor import SlurmExecutor
from harness.config.hardware import GpuHardware
from harness.config.matrix import Slo
from harness.load.prompts import kind_of
from harness.metrics.slo_claims import BOUNDS
from harness.metrics.tail_bound import samples_needed
from harness.plan.cells import Cell, Plan, ServerConfig, ServerGroup
from harness.plan.rules import notes
from harness.predict import PlanPredictions, Prediction, stated_assumptions
from harness.profiling import nsys_cpu_cells
from harness.profiling.profiled_cells import profiled
from harness.report.deployment_view import deployment_lines
from harness.servers.deployment import deployment_spec
from harness.servers.runtime import NodeRank, resolve_model_path
from harness.servers.runtime_lookup import get_runtime, launch_spec
from harness.servers.self_description import SelfDescription

SHOWN_PORT = 8000
"""The port printed in commands; the real one is picked free at launch."""


def _hardware(plan: Plan) -> str:
    hardware = plan.matrix.hardware
    if isinstance(hardware, GpuHardware):
        return f"gpu, {hardware.gpus_per_replica}x {hardware.gpu} per replica"
    return hardware.kind


def _command(server: ServerConfig) -> str:
    spec = launch_spec(server, SHOWN_PORT)
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(spec.env.items()))
    return f"{env + ' ' if env else ''}{shlex.join(spec.argv)}"


def _slurm_job(plan: Plan, group: ServerGroup, executor: SlurmExecutor) -> list[str]:
    """The group's Slurm job: its resources, the estimate of its time and cost, and each node's exact command."""
    server = group.server
    shape = job_shape(server, executor)
    hours, device_hours, usd = group_estimate(plan, group)
    cost = f", ${usd:,.2f}" if usd is not None else ""
    where = f"partition {shape.partition}" if shape.partition else "default partition"
    lines = [f"  slurm job: {shape.label} limit, {where}; ESTIMATE {hours:.2f} h, {device_hours:.1f} "
             f"device-hours{cost} per launch"]
    spec = launch_spec(server, SHOWN_PORT)
    placement = Placement(job_id="$SLURM_JOB_ID", nodes=tuple(f"<node{i}>" for i in range(shape.nodes)),
                          head_addr="<node0-addr>", container_image=executor.container_image,
                          container_mounts=executor.container_mounts, srun_args=executor.srun_args)
    if shape.nodes == 1:  # the launch line above, as a step on the node when a container wraps it
        return [*lines, f"  node 0: {shlex.join(placement.srun('<node0>', spec).argv)}"] if \
            executor.container_image else lines
    runtime = get_runtime(server.runtime)
    for rank in range(shape.nodes):
        node = NodeRank(rank=rank, nodes=shape.nodes, head_addr="<node0-addr>", rendezvous_port=29500,
                        ranks_per_node=shape.ranks_per_node)
        node_spec = runtime.node_launch_spec(server, resolve_model_path(server), SHOWN_PORT, node)
        if rank or executor.container_image:
            node_spec = placement.srun(f"<node{rank}>", node_spec)
        lines.append(f"  node {rank}{' (head, HTTP)' if rank == 0 else ''}: {shlex.join(node_spec.argv)}")
    return lines


def _deployment(plan: Plan, server: ServerConfig) -> list[str]:
    """A deployment's parts and router, each with its exact argv, and what the whole costs per hour."""
    ports = itertools.count(SHOWN_PORT + 1)
    spec = deployment_spec(server, SHOWN_PORT, lambda: next(ports), Path("<kv-scratch>"))
    price = replica_price(plan.matrix, load_price_table(plan.matrix.cost, Path.cwd())).for_server(server)
    usd = f", ${price.usd_per_hour:,.2f}/hour" if price.usd_per_hour is not None else ""
    lines = [f"  deployment: {server.topology.label}, {len(spec.parts)} servers = {price.devices} {price.unit}"
             f"{'s' if price.devices > 1 else ''}{usd}"]
    for part in spec.parts:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(part.spec.env.items()))
        lines.append(f"    {part.name}: {env + ' ' if env else ''}{shlex.join(part.spec.argv)}")
    return [*lines, f"    router: {shlex.join(spec.router.argv)}"]


def _load(cell: Cell) -> str:
    """How the cell is driven: bound, pacing, ramp and repeats, in words."""
    load = cell.load
    workload = cell.workload
    count = workload.requests_for(cell.concurrency)
    bound = f"{load.duration_s:g} s" if load.duration_s is not None else kind_of(workload).plan_bound(count)
    parts = [f"{bound} + {cell.workload.warmup_requests} warm-up"]
    if load.request_rate is not None:
        shape = "Poisson" if load.burstiness == 1.0 else f"gamma burstiness {load.burstiness:g}"
        parts.append(f"{load.request_rate:g} req/s {shape}")
    if load.ramp_up_s:
        parts.append(f"ramp {load.ramp_up_s:g} s")
    if cell.min_measured_s is not None:
        least = f"at least {cell.repeats} runs, " if cell.repeats > 1 else ""
        parts.append(f"runs again until {cell.min_measured_s:g} s measured ({least}at most {cell.most_runs})")
    elif cell.repeats > 1:
        parts.append(f"x{cell.repeats} repeats")
    return ", ".join(parts)


def _predicted(cell: Cell, predictions: PlanPredictions | None, price: ReplicaPrice) -> list[str]:
    """The cell's prediction on one line, labelled as one, with $/MTok at the replica's price; or why none."""
    if predictions is None:
        return []
    found = predictions.prediction(cell.cell_id)
    if found is None:
        return [f"    no prediction: {predictions.reason(cell.cell_id) or 'not predicted'}"]
    per_gpu = f", {found.output_tok_s_per_gpu:,.0f} tok/s/GPU" if found.output_tok_s_per_gpu is not None else ""
    usd = price.for_server(cell.server).usd_per_hour
    cost = f", ${usd_per_mtok(usd, found.output_tok_s):,.3g}/MTok" if usd is not None else ""
    return [f"    PREDICTED ({found.predictor}): TTFT {_figure(found.ttft_ms)} ms, TPOT {_figure(found.tpot_ms)} ms, "
            f"{_figure(found.tok_s_user)} tok/s/user, {found.output_tok_s:,.4g} tok/s/replica{per_gpu}{cost}"]


def _figure(value: float) -> str:
    """Three significant figures, never in exponent form (a 4-second TTFT reads 4,000, not 4e+03)."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _assumptions(predictions: PlanPredictions | None) -> list[str]:
    """Each predictor's assumptions once (they are the same for every cell of a kind), under the cells."""
    if predictions is None:
        return []
    seen = stated_assumptions(o for o in predictions.outcomes.values() if isinstance(o, Prediction))
    if not seen:
        return []
    lines = ["", "PREDICTIONS are a model's, not measurements; what they assume:"]
    lines += [f"  {predictor}: {key}: {value}" for predictor, key, value in seen]
    return lines


def _claims(cell: Cell, slo: Slo, launches: int) -> list[str]:
    """What each SLO bound's claim will need (LoadGen's early-stopping bound, with none of the requests over it)
    against the requests the cell will measure, pooled over its repeats and launches."""
    wanted = [(name, samples_needed(0, percentile)) for field, name, _, percentile in BOUNDS
              if getattr(slo, field) is not None]
    if not wanted or cell.load.duration_s is not None:
        return []
    unit = kind_of(cell.workload).requests_per_unit()
    measured = round(cell.workload.requests_for(cell.concurrency) * unit) * cell.repeats * launches
    parts = []
    for needed, names in itertools.groupby(sorted(wanted, key=lambda w: w[1]), key=lambda w: w[1]):
        named = " and ".join(name for name, _ in names)
        parts.append(f"{named} need {needed} requests with none over the bound" + (" (short: insufficient samples)"
                                                                  if needed > measured else ""))
    more = " or more" if cell.min_measured_s is not None else ""
    return [f"    SLO claims on its {measured} requests{more}: {'; '.join(parts)}"]


def _profiles(cell: Cell, picked: set[str], under_nsys: set[str]) -> list[str]:
    if cell.cell_id not in picked:
        return []
    what = "GPU: nsys" if isinstance(cell.server.hardware, GpuHardware) else "the engine's torch profiler"
    if cell.cell_id in under_nsys:
        what += ", then Nsight Systems in a launch of its own"
    return [f"    profile: one more window after its load ({what})"]


def render_plan(plan: Plan, predictions: PlanPredictions | None = None,
                described: Mapping[str, SelfDescription | str] | None = None) -> str:
    """The plan as text; ``described``: each deployment's self-description, or why it could not be read."""
    matrix = plan.matrix
    price = replica_price(matrix, load_price_table(matrix.cost, Path.cwd()))
    rounds = (f", each launched {matrix.launches} times in interleaved rounds (every configuration once per "
              "round)") if matrix.launches > 1 else ""
    if plan.rounds() > matrix.launches:
        rounds += (f", the cells `more_launches` selects on up to {plan.rounds()} launches (their servers launched "
                   "again for them alone)")
    lines = [f"matrix {matrix.name}: {len(plan.cells)} cells on {len(plan.groups)} server configurations{rounds}"
             f" (hardware: {_hardware(plan)})", ""]
    picked = {c.cell_id for c in profiled(matrix.profile, plan.cells)}
    under_nsys = {c.cell_id for c in nsys_cpu_cells(matrix.profile, plan.cells)}
    for index, group in enumerate(plan.groups, 1):
        server = group.server
        lines.append(f"server {index} [{server.server_id}] {server.label}  ({len(group.cells)} cells)")
        if server.deployment_name is not None:
            lines += deployment_lines(server, (described or {}).get(server.deployment_name))
        elif server.topology.is_colocated:
            lines.append(f"  launch: {_command(server)}")
        else:
            lines += _deployment(plan, server)
        if isinstance(matrix.executor, SlurmExecutor):
            lines += _slurm_job(plan, group, matrix.executor)
        for cell in group.cells:
            launches = plan.launches_of(cell)
            more = f", {launches} launches" if launches > matrix.launches else ""
            lines += [f"  cell {cell.cell_id}  {cell.workload_name} c={cell.concurrency}  ({_load(cell)}{more})",
                      *_predicted(cell, predictions, price), *_claims(cell, matrix.slo, launches),
                      *_profiles(cell, picked, under_nsys)]
        lines += [f"  search {search.search_id}  {search.workload_name} {search.axis}: highest meeting the SLO in "
                  f"{search.spec.min:g}..{search.spec.max:g}, at most {search.spec.max_probes} probe cells"
                  for search in group.searches]
    if plan.skipped:
        lines += ["", f"skipped by the recipe rules ({sum(len(s.cells) for s in plan.skipped)} cells on "
                  f"{len(plan.skipped)} servers; unsupported: skip):"]
        by_reason: dict[tuple[str, ...], list[str]] = {}
        for skipped in plan.skipped:
            by_reason.setdefault(skipped.reasons, []).append(f"{skipped.server.label} ({len(skipped.cells)} cells)")
        for reasons, servers in by_reason.items():
            lines.append(f"  {'; '.join(reasons)}:")
            lines += [f"    {server}" for server in servers]
    contradicted = [line for said in (described or {}).values() if not isinstance(said, str)
                    for line in said.warnings()]
    unread = [f"deployment {name}: {said}" for name, said in (described or {}).items() if isinstance(said, str)]
    if contradicted or unread:
        lines += ["", "warnings (deployments):", *(f"  {line}" for line in contradicted + unread)]
    planned = estimate(plan, predictions=predictions)
    # judged on the priors' estimate, as `harness run` judges it before any prediction exists
    doubts = [f for f in implausible(plan, estimate(plan)) if not f.error]
    if doubts:
        lines += ["", "implausible (legal, but check before running):"]
        lines += [f"  {f.key}: {f.problem} (fix: {f.fix})" for f in doubts]
    found = notes(plan, get_runtime)
    if found:
        lines += ["", "notes:"]
        lines += [f"  {label}: {f.key}: {f.problem}{f' (fix: {f.fix})' if f.fix else ''}" for label, f in found]
    lines += _assumptions(predictions)
    lines += ["", *render_estimate(planned), "",
              f"{planned.launches} launches, {len(plan.cells)} cells; nothing was launched "
              f"(commands show port {SHOWN_PORT}; the real one is picked free at launch)."]
    return "\n".join(lines)
