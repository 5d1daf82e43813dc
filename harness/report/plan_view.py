"""A plan as text for ``harness plan``: each launch with its exact command, the cells it serves, what the rules
skipped or could not check, and the estimated GPU-hours and dollars of the whole run."""

from __future__ import annotations

import shlex

from harness.analysis.estimate import estimate, render_estimate
from harness.config.matrix import GpuHardware
from harness.plan.cells import Cell, Plan, ServerConfig
from harness.plan.rules import notes
from harness.servers.registry import get_runtime, launch_spec

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


def _load(cell: Cell) -> str:
    """How the cell is driven: bound, pacing, ramp and repeats, in words."""
    load = cell.load
    bound = f"{load.duration_s:g} s" if load.duration_s is not None else \
        f"{cell.workload.requests_for(cell.concurrency)} requests"
    parts = [f"{bound} + {cell.workload.warmup_requests} warm-up"]
    if load.request_rate is not None:
        shape = "Poisson" if load.burstiness == 1.0 else f"gamma burstiness {load.burstiness:g}"
        parts.append(f"{load.request_rate:g} req/s {shape}")
    if load.ramp_up_s:
        parts.append(f"ramp {load.ramp_up_s:g} s")
    if cell.repeats > 1:
        parts.append(f"x{cell.repeats} repeats")
    return ", ".join(parts)


def render_plan(plan: Plan) -> str:
    matrix = plan.matrix
    rounds = (f", each launched {matrix.launches} times in interleaved rounds (every configuration once per "
              "round)") if matrix.launches > 1 else ""
    lines = [f"matrix {matrix.name}: {len(plan.cells)} cells on {len(plan.groups)} server configurations{rounds}"
             f" (hardware: {_hardware(plan)})", ""]
    for index, group in enumerate(plan.groups, 1):
        server = group.server
        lines.append(f"server {index} [{server.server_id}] {server.label}  ({len(group.cells)} cells)")
        lines.append(f"  launch: {_command(server)}")
        lines += [f"  cell {cell.cell_id}  {cell.workload_name} c={cell.concurrency}  ({_load(cell)})"
                  for cell in group.cells]
    if plan.skipped:
        lines += ["", f"skipped by the recipe rules ({sum(len(s.cells) for s in plan.skipped)} cells on "
                  f"{len(plan.skipped)} servers; unsupported: skip):"]
        by_reason: dict[tuple[str, ...], list[str]] = {}
        for skipped in plan.skipped:
            by_reason.setdefault(skipped.reasons, []).append(f"{skipped.server.label} ({len(skipped.cells)} cells)")
        for reasons, servers in by_reason.items():
            lines.append(f"  {'; '.join(reasons)}:")
            lines += [f"    {server}" for server in servers]
    found = notes(plan, get_runtime)
    if found:
        lines += ["", "notes:"]
        lines += [f"  {label}: {f.key}: {f.problem}{f' (fix: {f.fix})' if f.fix else ''}" for label, f in found]
    lines += ["", *render_estimate(estimate(plan)), "",
              f"{len(plan.groups) * matrix.launches} launches, {len(plan.cells)} cells; nothing was launched "
              f"(commands show port {SHOWN_PORT}; the real one is picked free at launch)."]
    return "\n".join(lines)
