"""``harness regress MATRIX --against REV``: the reference (this repository at REV) re-measured beside the candidate
(the repository's work tree as it is: its harness, its matrix) in paired rounds, judged after every round from the
minimum on, until every gated figure is settled, none could settle within the cap, or a cap of rounds or minutes is
reached.

Every round's results stay on disk as the sides wrote them (``<out>/<matrix>/paired/<commit>/{reference,candidate}/
round-NN``), and the verdict so far is rewritten after every round, so an interrupted check keeps what it measured.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter

from harness.errors import HarnessError
from harness.fixtures import fixture_root
from harness.metrics import per_look_level
from harness.pipeline import ensure_fixtures, validate
from harness.regress.paired_verdict import Figure, Looks, Round, Rule, look_all
from harness.regress.reference_env import prepare
from harness.regress.reference_tree import (
    candidate_commit,
    checkout,
    reference_matrix,
    repository_root,
    resolve_revision,
    seed_fixtures,
    trees_dir,
)
from harness.regress.rounds import SideRun, balanced_orders, read_round, run_side
from harness.regress.side_metadata import side_site
from harness.store import Store, write_atomic
from harness.verdict import GateResult, GateRow

log = logging.getLogger(__name__)
_ORDER = {"failed": 0, "missing": 0, "regressed": 1, "inconclusive": 2}
FUTILITY_GRACE = 2
"""Rounds past the minimum before a check may stop because no figure could settle: one bad launch among three rounds
(a launch 30% slow on both cells, seen in an A/A check on 2026-11-29) makes every figure look hopeless, and two more
rounds show whether it was one launch or the machine."""


@dataclass(frozen=True, slots=True)
class PairedRequest:
    matrix: Path
    against: str
    out: Path
    repo: Path
    rule: tuple[int, int, float]
    """min rounds, max rounds, max minutes."""
    seed: int
    focus: tuple[Figure, ...] | None = None


@dataclass(frozen=True, slots=True)
class PairedCheck:
    """A paired check as saved (``paired.json``) and printed."""

    result: GateResult
    against: str
    reference_commit: str
    candidate_commit: str | None
    candidate_dirty: bool
    seed: int
    orders: tuple[str, ...]
    """Per round run, the side that ran first."""
    round_seconds: tuple[float, ...]
    stopped: str
    level: float
    min_rounds: int
    max_rounds: int
    max_minutes: float
    environments: tuple[str, ...]
    focus: tuple[Figure, ...] | None
    reproduce: str


def _result(rows: list[GateRow], tolerance: float, rounds: int, request: PairedRequest, commit: str) -> GateResult:
    rows = sorted(rows, key=lambda r: _ORDER.get(r.status, len(_ORDER)))
    return GateResult(rows=tuple(rows), tolerance=tolerance, launches=rounds, machine_speed="paired",
                      provenance=(f"reference = {request.against} ({commit[:12]}), candidate = the work tree; "
                                  f"{rounds} paired rounds",))


def _path(*directories: Path) -> str:
    return os.pathsep.join(str(d) for d in directories)


async def run_paired(request: PairedRequest) -> PairedCheck:
    """Run the paired check ``request`` describes and return (and save) its verdict."""
    min_rounds, max_rounds, max_minutes = request.rule
    repo = repository_root(request.repo)
    commit = resolve_revision(repo, request.against)
    head, dirty = candidate_commit(repo)
    plan = validate(request.matrix, launching=True)
    spec = plan.matrix.gates
    # absolute: each side's harness runs from its own tree, where a relative --out would land elsewhere
    root = Store(request.out.resolve(), plan.matrix.name).paired_dir(commit)
    shutil.rmtree(root, ignore_errors=True)  # a new check of this revision replaces the last one's rounds
    root.mkdir(parents=True)
    tree = checkout(repo, commit)
    theirs = reference_matrix(repo, tree, request.matrix, request.against)
    env = prepare(repo, tree, commit, plan, plan.matrix.name, root / "environment.log")
    await ensure_fixtures(plan)  # built before the reference's copies are seeded from them
    fixtures = seed_fixtures(tree, fixture_root())
    # each side sees its own tree's entry points, not the environment's installed harness (side_metadata)
    sites = {side: side_site(where, trees_dir(repo).parent / "sites" / label)
             for side, where, label in (("reference", tree, commit[:12]), ("candidate", repo, "work-tree"))}
    sides = {"reference": SideRun("reference", env.python, tree, theirs,
                                  {"PYTHONPATH": _path(tree, sites["reference"]),
                                   "HARNESS_FIXTURES_DIR": str(fixtures)}),
             "candidate": SideRun("candidate", sys.executable, repo, request.matrix.resolve(),
                                  {"PYTHONPATH": _path(repo, sites["candidate"]),
                                   "HARNESS_FIXTURES_DIR": str(fixture_root())})}
    rule = Rule(min_rounds, max_rounds, max_minutes, per_look_level(min_rounds, max_rounds))
    orders, looks = balanced_orders(request.seed, max_rounds), Looks()
    rounds: list[Round] = []
    seconds: list[float] = []
    rows: list[GateRow] = []
    stopped, started = "interrupted", time.monotonic()
    flags = f" --min-rounds {min_rounds} --max-rounds {max_rounds} --max-minutes {max_minutes:g}"
    reproduce = f"harness regress {request.matrix} --against {commit[:12]} --seed {request.seed}{flags}"

    def save() -> PairedCheck:
        check = PairedCheck(_result(rows, spec.tolerance, len(rounds), request, commit), request.against, commit,
                            head, dirty, request.seed, tuple(o[0] for o in orders[:len(rounds)]), tuple(seconds),
                            stopped, rule.level, min_rounds, max_rounds, max_minutes, env.notes, request.focus,
                            reproduce)
        write_atomic(root / "paired.json", TypeAdapter(PairedCheck).dump_json(check, indent=2))
        return check

    for number, order in enumerate(orders, start=1):
        began = time.monotonic()
        for side in order:
            log.info("round %d (at most %d): %s", number, max_rounds, side)
            out = root / side / f"round-{number:02d}"
            code = await run_side(sides[side], out)
            if code not in (0, 1):  # 1: a cell failed, which its result records; anything else is no round
                stopped = f"the {side} harness exited {code} in round {number}"
                save()
                raise HarnessError(f"{stopped}: see {out / 'harness.log'}")
        rounds.append(_read(root, number))
        seconds.append(time.monotonic() - began)
        rows, more = look_all(rounds, spec, rule, looks, request.focus)
        stopped = _stop(number, more, any(r.status == "inconclusive" for r in rows), rule, seconds,
                        time.monotonic() - started)
        save()
        if stopped:
            break
    return save()


def _read(root: Path, number: int) -> Round:
    sides = []
    for side in ("reference", "candidate"):
        out = root / side / f"round-{number:02d}"
        results = read_round(out)
        if not results:
            raise HarnessError(f"the {side} harness stored no result under {out} in round {number}: see "
                               f"{out / 'harness.log'}")
        sides.append(results)
    return sides[0], sides[1]


def _stop(number: int, more: bool, doubtful: bool, rule: Rule, seconds: list[float], elapsed: float) -> str:
    """Why the check stops after round ``number``; empty while another round is due."""
    if number < rule.min_rounds:
        return ""
    if not doubtful:
        return "every figure settled"
    if not more:
        if number < min(rule.min_rounds + FUTILITY_GRACE, rule.max_rounds):
            return ""
        return (f"no inconclusive figure could settle by round {rule.max_rounds} at its noise" if number <
                rule.max_rounds else f"the cap of {rule.max_rounds} rounds")
    if number >= rule.max_rounds:
        return f"the cap of {rule.max_rounds} rounds"
    if elapsed + sum(seconds) / len(seconds) > rule.max_minutes * 60:
        return f"the cap of {rule.max_minutes:g} minutes (another round would pass it)"
    return ""
