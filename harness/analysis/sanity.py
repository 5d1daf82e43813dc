"""What a plan asks for that is legal but implausible, or that this machine cannot do, judged before anything
launches: every numeric knob against the bound it is judged by, in one place.

The config models check types and signs; this module checks sense. A concurrency beyond what the servers admit at
once (``server.max_num_seqs`` x the deployment's decode servers) measures the server's queue, not its serving; one
beyond the open files this process may hold cannot be driven at all (each request in flight holds a connection).
A draft length beyond what any engine's published recipe drafts is most likely a typo, and so are a cell's request
count beyond what any claim needs, a warm-up longer than the measurement, and a time knob beyond its plausible
length (milliseconds written as seconds). A plan whose estimate is
beyond ``estimate.max_machine_hours`` is refused by ``harness run`` unless told to go on (``--yes``): an estimate
of days is a matrix nobody meant to wait for. Errors stop the validation pass (exit 2); warnings are printed by
``harness plan`` and logged by ``harness run``.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass

from harness.analysis.estimate import PlanEstimate
from harness.plan.cells import Plan

DRAFT_LENGTHS = {"suffix": 64}
"""The longest plausible draft per step, by method; 16 for the others: published recipes draft 1 to 8 tokens
(MTP 1-3, EAGLE-3 3-8, n-gram 3-5), while suffix decoding speculates up to 24 by default (vLLM)."""
DEFAULT_DRAFT_LENGTH = 16
OPEN_FILES_SPARE = 64
"""Files the load generator keeps for itself (logs, the store, the server's pipes) beside one socket a request."""
CELL_REQUESTS = 100_000
"""Measured requests a cell plausibly asks for: LoadGen's early stopping settles a p99 claim on 459 and a p99.9
claim on about 4,600; a hundred thousand is a count nobody waits for on one cell (the estimate judges the whole)."""
SECONDS = {"load.duration_s": 86_400.0, "load.ramp_up_s": 3_600.0, "server.startup_timeout_s": 7_200.0,
           "server.request_timeout_s": 3_600.0, "workload.think_time_s": 600.0}
"""The longest plausible value of each time knob: a day of load, an hour of ramp or per request, two hours for a
server to start (the largest checkpoints load in minutes), ten minutes between an agent's turns. Beyond it the value
is most likely milliseconds written as seconds."""


@dataclass(frozen=True, slots=True)
class Implausible:
    """One knob out of its bound: the matrix key, what is wrong, the fix; ``error`` when it cannot run at all."""

    key: str
    problem: str
    fix: str
    error: bool = False


def _concurrency(plan: Plan) -> list[Implausible]:
    found: dict[str, Implausible] = {}
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    for cell in plan.cells:
        server, c = cell.server, cell.concurrency
        if files != resource.RLIM_INFINITY and c > files - OPEN_FILES_SPARE:
            found.setdefault("files", Implausible(
                "axes.concurrency", f"{c} requests in flight need {c} connections, and this process may hold "
                f"{files} open files", "lower the concurrency, or raise the limit (ulimit -n)", error=True))
        topology = server.topology.root
        decode = getattr(topology, "decode", None) or topology.parts
        admits = server.settings.max_num_seqs * decode
        if c > admits:
            found.setdefault(f"admits:{admits}", Implausible(
                "axes.concurrency", f"{c} requests in flight on {server.label}, which admits {admits} at once "
                f"(server.max_num_seqs {server.settings.max_num_seqs} x {decode} decode server(s)): the rest wait "
                "in its queue, so the cell measures the queue", "lower the concurrency or raise server.max_num_seqs"))
    return list(found.values())


def _draft_lengths(plan: Plan) -> list[Implausible]:
    found: dict[tuple[str, int], Implausible] = {}
    for group in plan.groups:
        method = group.server.speculation.root
        k = getattr(method, "k", None)
        bound = DRAFT_LENGTHS.get(method.method, DEFAULT_DRAFT_LENGTH)
        if isinstance(k, int) and k > bound:
            found.setdefault((method.method, k), Implausible(
                "axes.speculation", f"{method.method} drafts k={k} tokens a step, beyond the {bound} any published "
                "recipe drafts: each rejected token costs a verify slot", f"use k <= {bound} (1-8 is usual)"))
    return list(found.values())


def _counts_and_times(plan: Plan) -> list[Implausible]:
    found: dict[str, Implausible] = {}
    for cell in plan.cells:
        workload, name = cell.workload, cell.workload_name
        requests, warmup = workload.num_requests, getattr(workload, "warmup_requests", 0)
        if requests > CELL_REQUESTS:
            found.setdefault(f"requests:{name}", Implausible(
                f"workloads.{name}.num_requests", f"{requests:,} measured requests a cell, beyond the "
                f"{CELL_REQUESTS:,} any claim needs (a p99 settles on 459)",
                "ask for fewer (slo.* claims say how many they need: `harness plan`), or split the cell"))
        if warmup > requests:
            found.setdefault(f"warmup:{name}", Implausible(
                f"workloads.{name}.warmup_requests", f"{warmup} warm-up requests before {requests} measured: the "
                "warm-up outweighs the measurement", "lower warmup_requests (1-2 warm a server) or raise num_requests"))
        values = {"load.duration_s": cell.load.duration_s, "load.ramp_up_s": cell.load.ramp_up_s,
                  "server.startup_timeout_s": cell.server.settings.startup_timeout_s,
                  "server.request_timeout_s": cell.server.settings.request_timeout_s,
                  "workload.think_time_s": getattr(workload, "think_time_s", None)}
        for key, value in values.items():
            if value is not None and value > SECONDS[key]:
                where = f"workloads.{name}.think_time_s" if key == "workload.think_time_s" else key
                found.setdefault(where, Implausible(
                    where, f"{value:,g} s, beyond the {SECONDS[key]:,g} s it plausibly takes",
                    "write it in seconds (a value in milliseconds is 1000 times too long), or lower it"))
    return list(found.values())


def implausible(plan: Plan, planned: PlanEstimate | None = None) -> list[Implausible]:
    """Every knob of ``plan`` out of its bound (and, given the plan's estimate, the estimate against the matrix's
    ``estimate.max_machine_hours``)."""
    found = _concurrency(plan) + _draft_lengths(plan) + _counts_and_times(plan)
    bound = plan.matrix.estimate.max_machine_hours
    if planned is not None and planned.device_hours > bound:
        found.append(Implausible(
            "estimate.max_machine_hours", f"the plan's estimate from its priors (before any prediction) is "
            f"{planned.device_hours:,.1f} machine-hours "
            f"({planned.hours:,.1f} h of wall time), beyond the {bound:g} this matrix allows a run",
            "narrow the matrix (fewer cells, requests or launches), raise estimate.max_machine_hours, or pass "
            "--yes to `harness run` to go on"))
    return found
