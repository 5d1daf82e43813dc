"""What a plan asks for that is legal but implausible, or that this machine cannot do, judged before anything
launches: every numeric knob against the bound it is judged by, in one place.

The config models check types and signs; this module checks sense. A concurrency beyond what the servers admit at
once (``server.max_num_seqs`` x the deployment's decode servers) measures the server's queue, not its serving; one
beyond the open files this process may hold cannot be driven at all (each request in flight holds a connection).
A draft length beyond what any engine's published recipe drafts is most likely a typo. A plan whose estimate is
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


def implausible(plan: Plan, planned: PlanEstimate | None = None) -> list[Implausible]:
    """Every knob of ``plan`` out of its bound (and, given the plan's estimate, the estimate against the matrix's
    ``estimate.max_machine_hours``)."""
    found = _concurrency(plan) + _draft_lengths(plan)
    bound = plan.matrix.estimate.max_machine_hours
    if planned is not None and planned.device_hours > bound:
        found.append(Implausible(
            "estimate.max_machine_hours", f"the plan's estimate from its priors (before any prediction) is "
            f"{planned.device_hours:,.1f} machine-hours "
            f"({planned.hours:,.1f} h of wall time), beyond the {bound:g} this matrix allows a run",
            "narrow the matrix (fewer cells, requests or launches), raise estimate.max_machine_hours, or pass "
            "--yes to `harness run` to go on"))
    return found
