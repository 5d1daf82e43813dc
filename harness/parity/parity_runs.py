"""The parity stage: BFCL on each selected server, once per decoding, then each cell's verdict against its reference.

Accuracy belongs to a server, not to a concurrency step: a server's runs are stored once, under
``reports/<matrix>/parity/<server_id>/<decoding>.json``, while the server that the load cells used is still up.
The verdict needs the reference too (the same model, runtime, parallelism and speculation at the reference
precision; with ``parity.reference_runtime``, another runtime's servers are judged against that runtime's), so it is
computed after every server has run, and written into each cell's ``parity.json``, where
the report, the recommendation and the gate read it. A reference server runs free decoding twice
(``parity.rerun_reference``) and its cells are judged on the rerun against the first run: the gate's verdict when
nothing but the measurement changes (without a rerun, a reference is compared with itself: Δ 0, passes).

Faults stay per server: a server without a tool-call parser, a model without a chat template, or a schema the
grammar backend rejects comes back as a run with an ``error`` (the parity library's rule), so its cells show
"not judged" with the cause and every other server goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from harness.bfcl.package import BfclUnavailable
from harness.config.evidence_sections import ParitySpec
from harness.errors import ConfigError
from harness.parity.bfcl_data import CATEGORIES, BfclItem, load_items
from harness.parity.bfcl_run import run_bfcl
from harness.parity.cell_parity import cell_parity, write_cell_parity
from harness.parity.comparison import POWER_DROP_PP, ParityComparison, ParityRule, compare, decoding_cost
from harness.parity.multi_turn_data import MultiTurnItem, load_multi_turn_items
from harness.parity.multi_turn_result import MULTI_TURN, as_parity_run, write_multi_turn_run
from harness.parity.multi_turn_run import run_multi_turn
from harness.parity.paired_stats import items_needed, mcnemar_exact
from harness.parity.run_result import ParityRun, RunSettings, stored_run, write_run
from harness.plan.cells import Cell, Plan, ServerConfig, ServerGroup
from harness.servers.runtime_lookup import get_runtime
from harness.store import Store

log = logging.getLogger(__name__)

RERUN = "free-rerun"
"""The reference server's second free-decoding run: what the reference cell is judged on, against its first."""

def _selected(spec: ParitySpec, cells: Sequence[Cell]) -> bool:
    """Whether the server of ``cells`` gets parity runs: all servers, or those with a cell the selectors pick."""
    return not spec.cells or any(cell.matches(rule) for cell in cells for rule in spec.cells)


def _missing(spec: ParitySpec, store: Store, server: ServerConfig, *, force: bool = False) -> list[str]:
    """The decodings still to run on ``server`` (all of them with ``force``): those without a stored run made as
    the matrix now asks (a changed sample, max_tokens or concurrency runs them again)."""
    return [d for d in _runs(spec, server) if force or not _current(spec, store, server, d)]


def _current(spec: ParitySpec, store: Store, server: ServerConfig, decoding: str) -> bool:
    path = store.parity_run_path(server.server_id, decoding)
    run = stored_run(path)
    if run is None:
        return False  # none, or damaged (set aside) or from an incompatible version: run it again
    if run.settings != _settings(spec, "free" if decoding in (RERUN, MULTI_TURN) else decoding):
        return False
    if decoding == MULTI_TURN:
        return True
    return {i.id for i in run.items} == {i.id for i in _items(spec.single_turn, spec.limit, spec.seed)}


@cache
def _items(categories: tuple[str, ...], limit: int | None, seed: int) -> tuple[BfclItem, ...]:
    return tuple(load_items(categories, limit=limit, seed=seed)) if categories else ()


@cache
def _entries(categories: tuple[str, ...], limit: int | None, seed: int) -> tuple[MultiTurnItem, ...]:
    return tuple(load_multi_turn_items(categories, limit=limit, seed=seed)) if categories else ()


def _multi_turn_limit(spec: ParitySpec) -> int | None:
    return spec.multi_turn_limit if spec.multi_turn_limit is not None else spec.limit


def _runs(spec: ParitySpec, server: ServerConfig | None = None) -> list[str]:
    """What a server runs: each single-turn decoding, then multi-turn (free decoding only) when asked for, and on
    the reference server a rerun of free decoding (``RERUN``) when the spec asks for one."""
    single = spec.decoding if spec.single_turn else ()
    # a deployment is never rerun: the noise floor is measured on a launched reference, not on somebody's server
    rerun = (spec.rerun_reference and "free" in single and server is not None and not server.is_deployment
             and server.precision.label == spec.reference and spec.references(server.runtime))
    return [*single, *((MULTI_TURN,) if spec.multi_turn else ()), *((RERUN,) if rerun else ())]


def check_parity_suite(plan: Plan) -> None:
    """Load the BFCL sample before anything launches: a missing bfcl-eval, an unknown category, a sample too small
    for any verdict, or multi-turn on a server without a tool-call parser is a ConfigError now, not after every
    server has started."""
    spec = plan.matrix.parity
    if spec is None:
        return
    try:
        _items(spec.single_turn, spec.limit, spec.seed)
        _entries(spec.multi_turn, _multi_turn_limit(spec), spec.seed)
    except BfclUnavailable as exc:
        raise ConfigError("matrix", "parity", f"BFCL's data and checker cannot be loaded: {exc}",
                          "run `make setup` (it installs bfcl-eval), or remove the parity section") from exc
    except (KeyError, ValueError) as exc:
        raise ConfigError("matrix", "parity.categories", str(exc), f"use BFCL categories among {CATEGORIES}") \
            from exc
    for label, items in (("single-turn", _items(spec.single_turn, spec.limit, spec.seed)),
                         ("multi-turn", _entries(spec.multi_turn, _multi_turn_limit(spec), spec.seed))):
        # The strongest evidence n paired items can give is n flips one way: exact McNemar p = 2 / 2^n.
        if items and mcnemar_exact(len(items), 0) >= spec.alpha:
            raise ConfigError("matrix", "parity.limit", f"{len(items)} {label} items per run cannot make any drop "
                              f"significant at alpha {spec.alpha:g} (even all of them flipping gives McNemar p = "
                              f"{mcnemar_exact(len(items), 0):.3g})",
                              "raise parity.limit (6 paired items are the least that can reach p < 0.05; a 5-point "
                              "drop needs hundreds: the report states how many)")
        _warn_weak(label, len(items), spec)
    if spec.multi_turn:
        for group in plan.groups:
            server = group.server
            if _selected(spec, group.cells) and get_runtime(server.runtime).tool_parser(server.model) is None:
                raise ConfigError("matrix", f"models.{server.model_name}.family",
                                  f"multi-turn BFCL needs the server's tool calls, and {server.runtime} has no "
                                  f"tool-call parser for model {server.model_name!r}",
                                  "set the model's family (e.g. qwen3) or tool_call_parser, or drop the multi_turn "
                                  "categories")
    if not any(g.server.precision.label == spec.reference for g in plan.groups):
        raise ConfigError("matrix", "parity.reference", f"no server runs the reference precision "
                          f"{spec.reference!r}, so no cell can be compared",
                          "add it to the precision axis or set parity.reference to one of its labels")
    runtimes = sorted({g.server.runtime for g in plan.groups if g.server.precision.label == spec.reference})
    if spec.reference_runtime is not None and spec.reference_runtime not in runtimes:
        raise ConfigError("matrix", "parity.reference_runtime", f"no {spec.reference_runtime!r} server runs the "
                          f"reference precision {spec.reference!r}, so no other runtime's cell can be compared",
                          f"set parity.reference_runtime to one of {runtimes} (or remove it: each runtime its own "
                          "reference)")


def _warn_weak(label: str, items: int, spec: ParitySpec) -> None:
    # Not an error: a small sample still catches a large drop. But every pass it gives will read "inconclusive",
    # and the user should know that before the servers start, not from the report.
    if not items or not spec.min_power:
        return
    drop = POWER_DROP_PP / 100
    least = items_needed(drop, drop, spec.alpha, spec.min_power)
    if least is None or items < least:
        log.warning("parity: %d %s items per run are fewer than the %s a pass needs for %.0f%% power against a "
                    "%g-point drop (parity.min_power), so every pass will be inconclusive; raise parity.limit, or "
                    "lower parity.min_power to let weaker passes count", items, label,
                    f"{least:,}" if least else "5,000+", spec.min_power * 100, POWER_DROP_PP)


async def _run_on_server(spec: ParitySpec, store: Store, server: ServerConfig, base_url: str, model: str,
                         decodings: Sequence[str]) -> list[ParityRun]:
    """Run BFCL on a live server for each of ``decodings`` and store each run (a failed run is stored too)."""
    items = _items(spec.single_turn, spec.limit, spec.seed)
    runs = []
    for decoding in decodings:
        if decoding == MULTI_TURN:
            runs.append(await _run_multi_turn(spec, store, server, base_url, model))
            continue
        log.info("parity %s: %d BFCL items, decoding %s", server.label, len(items), decoding)
        run = await run_bfcl(base_url, model, items, _settings(spec, "free" if decoding == RERUN else decoding))
        if run.error:
            log.warning("parity %s (%s): %s", server.label, decoding, run.error)
        write_run(run, store.parity_run_path(server.server_id, decoding))
        runs.append(run)
    return runs


def _settings(spec: ParitySpec, decoding: str) -> RunSettings:
    return RunSettings(decoding=decoding, max_tokens=spec.max_tokens, concurrency=spec.concurrency, seed=spec.seed,
                       timeout_s=spec.request_timeout_s)


async def _run_multi_turn(spec: ParitySpec, store: Store, server: ServerConfig, base_url: str,
                          model: str) -> ParityRun:
    """BFCL multi-turn on the live server: the full record is stored, its single-turn shape is returned."""
    entries = _entries(spec.multi_turn, _multi_turn_limit(spec), spec.seed)
    log.info("parity %s: %d BFCL multi-turn entries", server.label, len(entries))
    run = await run_multi_turn(base_url, model, entries, _settings(spec, "free"), max_steps=spec.max_steps)
    if run.error:
        log.warning("parity %s (multi-turn): %s", server.label, run.error)
    write_multi_turn_run(run, store.parity_multi_turn_path(server.server_id))
    flat = as_parity_run(run)
    write_run(flat, store.parity_run_path(server.server_id, MULTI_TURN))
    return flat


def reference_of(server: ServerConfig, servers: Sequence[ServerConfig], spec: ParitySpec) -> ServerConfig | None:
    """The server that differs from ``server`` only in precision, at the reference precision; for a server of
    another runtime than ``spec.reference_runtime``, the one that differs from it in precision and runtime (its
    environment too) and runs on the reference runtime. A deployment's is the deployment it names
    (``parity_reference``), else ``deployment_reference``."""
    if server.deployment is not None:
        named = server.deployment.parity_reference
        if named is not None:
            return next((s for s in servers if s.deployment_name == named), None)
        return deployment_reference(server, servers, spec)
    own = spec.references(server.runtime)
    runtime = server.runtime if own else spec.reference_runtime
    apart = {"precision"} if own else {"precision", "runtime", "runtime_env"}
    mine = server.model_dump(mode="json", exclude=apart)
    return next((s for s in servers if s.precision.label == spec.reference and s.runtime == runtime
                 and not s.is_deployment and s.model_dump(mode="json", exclude=apart) == mine), None)


def deployment_reference(server: ServerConfig, servers: Sequence[ServerConfig],
                         spec: ParitySpec) -> ServerConfig | None:
    """The launched server a deployment is judged against: same model, at the reference precision, on
    ``parity.reference_runtime`` when it is set; of those, the deployment's own runtime first, then without
    speculation, then colocated (its recipe is declared, so the closest launched recipe judges it)."""
    candidates = [s for s in servers if not s.is_deployment and s.model_name == server.model_name
                  and s.precision.label == spec.reference
                  and (spec.reference_runtime is None or s.runtime == spec.reference_runtime)]
    candidates.sort(key=lambda s: (s.runtime != server.runtime, not s.speculation.is_off,
                                   not s.topology.is_colocated))
    return candidates[0] if candidates else None


def _stored(store: Store, server: ServerConfig, decodings: Sequence[str]) -> dict[str, ParityRun]:
    return {d: run for d in decodings if (run := stored_run(store.parity_run_path(server.server_id, d)))}


def _judge(spec: ParitySpec, plan: Plan, store: Store) -> int:
    """Compare every server's stored runs with its reference's and write its cells' ``parity.json``; returns
    how many servers got a verdict. Servers without a reference are logged and left without one."""
    servers = [group.server for group in plan.groups]
    judged = 0
    for group in plan.groups:
        runs = _stored(store, group.server, _runs(spec, group.server))
        rerun = runs.pop(RERUN, None)
        if not runs:
            continue
        reference = reference_of(group.server, servers, spec)
        ref_runs = _stored(store, reference, _runs(spec)) if reference is not None else {}
        comparisons = {d: compare(ref_runs[d], run, _rule(spec)) for d, run in runs.items() if d in ref_runs}
        if rerun is not None and "free" in runs:
            comparisons["free"] = _rerun_comparison(runs["free"], rerun, spec)
        if not comparisons:
            log.warning("parity %s: no stored run of a reference server at precision %s to compare with",
                        group.server.label, spec.reference)
            continue
        free = runs.get("free")
        costs = {d: decoding_cost(free, run) for d, run in runs.items()
                 if free is not None and d not in ("free", MULTI_TURN)}
        verdict = cell_parity(comparisons, costs)
        for cell in group.cells:
            write_cell_parity(verdict, store.parity_verdict_path(cell))
        judged += 1
    return judged


def _rule(spec: ParitySpec) -> ParityRule:
    return ParityRule(max_drop_pp=spec.max_drop_pp, alpha=spec.alpha, min_power=spec.min_power, seed=spec.seed)


def _rerun_comparison(first: ParityRun, rerun: ParityRun, spec: ParitySpec) -> ParityComparison:
    """The reference judged on its own rerun: what the gate says when nothing but the measurement changes."""
    judged = compare(first, rerun, _rule(spec))
    return judged.model_copy(update={"reason": f"rerun of the reference against its first run: {judged.reason}",
                                     "rerun": True})


@dataclass(frozen=True, slots=True)
class ParityStage:
    """The parity stage's one entry, built from the matrix's ``parity`` block and the run's store. It acts at three
    moments of a run, one method each: what a server still owes before its launch (``owed``), the runs on its live
    server (``run``), and every server's verdict against its reference once all have run (``judge``). Without a
    ``parity`` block it owes nothing and judges nothing."""

    spec: ParitySpec | None
    store: Store

    def owed(self, group: ServerGroup, *, force: bool = False) -> tuple[str, ...]:
        """The decodings still to run on the group's server: none unless the matrix selects it; all with ``force``."""
        if self.spec is None or not _selected(self.spec, group.cells):
            return ()
        return tuple(_missing(self.spec, self.store, group.server, force=force))

    async def run(self, server: ServerConfig, base_url: str, model: str,
                  decodings: Sequence[str]) -> list[ParityRun]:
        """BFCL on the live server for each of ``decodings``, each run stored (a failed run too)."""
        if self.spec is None or not decodings:
            return []
        return await _run_on_server(self.spec, self.store, server, base_url, model, decodings)

    def judge(self, plan: Plan) -> int:
        """Every server's stored runs compared with its reference's, into its cells' ``parity.json``; returns how many
        servers got a verdict (one without a reference is logged and left without)."""
        return 0 if self.spec is None else _judge(self.spec, plan, self.store)
