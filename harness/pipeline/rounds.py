"""A whole run: load and vet the plan, then launch every server configuration ``launches`` times in interleaved
rounds, probing the machine's speed between rounds, and pool each cell's launches into its result.

Round ``r`` launches every configuration once, in plan order, so a slow stretch of the machine lands on all of them
instead of on the configurations that happened to run last (a configuration some of whose cells ``more_launches``
selects is launched in the later rounds for those cells alone); the machine-speed probe runs before every round and
after the last (``harness.calibration``), while no server holds the cores. Parity and the profile window run on the
first launch of their server only. Completed launches are skipped unless forced, so an interrupted run resumes at
the launch it was on; cancellation unwinds through the server's context manager, and every finished launch is
already on disk.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from harness.calibration import Calibration, RoundProbes
from harness.fixtures import build_fixtures_async
from harness.metrics import combine_launches
from harness.parity import ParityStage
from harness.pipeline.deployment_preflight import deployment_access, describe_deployments
from harness.pipeline.executors import RoundExecutor, make_executor
from harness.pipeline.run_progress import RunProgress
from harness.pipeline.search import searches_to_run, with_probes
from harness.pipeline.validation import check_workloads
from harness.pipeline.work import GroupWork
from harness.plan import Cell, Plan
from harness.predict import predict_plan, write_predictions
from harness.profiling import ProfileStage
from harness.report import render_report
from harness.result_records import CellResult
from harness.servers import fixture_names, get_runtime
from harness.store import Store, now_iso
from harness.verdict import write_verdicts

log = logging.getLogger(__name__)


async def ensure_fixtures(plan: Plan) -> None:
    """Build (or find cached) the project's own tiny models that the plan's servers load, drafters included."""
    await build_fixtures_async(set().union(*(fixture_names(g.server) for g in plan.groups)))


def _round_probes(plan: Plan, store: Store, force: bool, local: bool) -> RoundProbes:
    """The machine-speed probes between rounds, taken when some launched engine's speed is this machine's (on a
    cluster the servers run on other machines than the probe) and the matrix has not turned them off."""
    wanted = plan.matrix.gates.machine_speed != "none"
    # a deployment runs on its own machines: this one's speed says nothing about its figures
    active = local and wanted and any(get_runtime(g.server.runtime).machine_bound and not g.server.is_deployment
                                      for g in plan.groups)
    return RoundProbes(store.calibration_path, active=active, force=force)


def _pooled(cell: Cell, store: Store, launches: int, rounds: int, calibration: Calibration) -> CellResult | None:
    """The cell's result over its ``launches`` (None while some launch is still to run); a run of several
    ``rounds`` stores every launch apart, even a cell's only one."""
    results = [store.read_result(cell, launch if rounds > 1 else None) for launch in range(launches)]
    if any(r is None for r in results):
        return None
    done = [r for r in results if r is not None]
    machine_s = tuple(calibration.round_seconds(launch) for launch in range(launches))
    failed = [(k, r) for k, r in enumerate(done) if r.status != "ok" or r.summary is None]
    if failed:
        reason = "; ".join(f"launch {k}: {r.reason}" for k, r in failed) if launches > 1 else failed[0][1].reason
        return done[failed[0][0]].model_copy(update={"reason": reason, "machine_s": machine_s})
    summary = combine_launches([r.summary for r in done if r.summary is not None])
    return done[0].model_copy(update={"summary": summary, "finished_at": done[-1].finished_at,
                                      "machine_s": machine_s})


async def run_plan(plan: Plan, store: Store, *, force: bool = False, launches: int | None = None,
                   source: str = "matrix") -> list[CellResult]:
    """Run every incomplete cell of the plan on ``launches`` launches of its server (default: the matrix's; more
    for the cells ``more_launches`` selects, whose servers are launched again for them alone), its profiles and
    parity runs, where the matrix's executor puts them; then judge parity. Returns the results of the cells run
    now."""
    executor = make_executor(plan, store, source)  # validated already (harness.pipeline.validation)
    store.begin_run(fresh=force)  # a forced run is a new run in the history; a resumed one is the same run
    with deployment_access(plan, source):
        await describe_deployments(plan, store)  # a deployment refusing the key stops the run here
        return await _run_rounds(plan, store, executor, force=force, launches=launches, source=source)


async def _run_rounds(plan: Plan, store: Store, executor: RoundExecutor, *, force: bool, launches: int | None,
                      source: str) -> list[CellResult]:
    rounds = plan.rounds(launches)

    def owed(cell: Cell) -> int:
        return plan.launches_of(cell, launches)
    await ensure_fixtures(plan)
    check_workloads(plan, source, deferred_only=True)
    await asyncio.to_thread(_predict, plan, store)
    if force:
        for cell in plan.cells:
            store.clear_launches(cell)
    searches = {g.server.server_id: searches_to_run(g.searches, store, force) for g in plan.groups}
    finished = set() if force else {c.cell_id for c in with_probes(plan, store).cells
                                    if store.is_complete(c, launches=owed(c))}
    measured = {c.cell_id for c in plan.cells} - finished
    probes = _round_probes(plan, store, force, executor.local)
    parity, profiles = ParityStage(plan.matrix.parity, store), ProfileStage(plan.matrix.profile, store)
    extras = {g.server.server_id: (profiles.owed(g.cells, force=force), parity.owed(g, force=force))
              for g in plan.groups}
    # what the person waiting sees: launches and cells done, and the time left (harness.pipeline.run_progress)
    progress = RunProgress(plan, rounds, launches=launches, finished=frozenset(finished))
    async with progress.running():
        for round_ in range(rounds):
            launch = round_ if rounds > 1 else None
            # the first launch runs the searches; later ones measure the probes they chose, as cells
            current = with_probes(plan, store) if round_ else plan
            measured |= {c.cell_id for c in current.cells} - finished
            work = []
            for group in current.groups:
                cells = [c for c in group.cells if c.cell_id in measured and owed(c) > round_
                         and not (launch is not None and store.is_complete(c, launch))]
                to_profile, decodings = extras.pop(group.server.server_id, ((), ()))
                group_searches = tuple(searches.pop(group.server.server_id, ()))
                if cells or to_profile or decodings or group_searches:
                    work.append(GroupWork(group, tuple(cells), tuple(to_profile), tuple(decodings), group_searches))
            progress.round_formed(round_, work)
            if not work:
                continue
            await probes.probe(round_, now_iso())
            log.info("round %d/%d: %d server configurations", round_ + 1, rounds, len(work))
            await executor.run_round(work, launch)
            progress.round_finished()
            await probes.probe(round_ + 1, now_iso())
    results = []
    for cell in with_probes(plan, store).cells:
        if cell.cell_id in finished:
            continue
        pooled = _pooled(cell, store, owed(cell), rounds, probes.calibration)
        if pooled is not None:
            store.write_result(cell, pooled)
            results.append(pooled)
    parity.judge(plan)
    return results


def _predict(plan: Plan, store: Store) -> None:
    """Every cell predicted before the first launch (its fixtures are on disk by now), kept with the run so the
    report can set measured beside predicted. A predictor that breaks costs the run its predictions, never the run:
    a prediction is advice."""
    try:
        predictions = predict_plan(plan)
    except Exception:  # noqa: BLE001  (any predictor's failure: logged whole, the run goes on)
        log.exception("prediction failed; the run goes on without predictions")
        return
    write_predictions(predictions, store.predictions_path)
    answered = sum(1 for cell in plan.cells if predictions.prediction(cell.cell_id))
    log.info("predicted %d of %d cells before launch (%s)", answered, len(plan.cells),
             ", ".join(predictions.predictors) or "no predictor answered")


def render(plan: Plan, store: Store, *, matrix_path: str | None = None, record_run: bool = False) -> Path:
    """Judge the stored run (its lock, and the gate against the baseline and the history; after a run,
    ``record_run`` records it in the history first), then render the report from disk; the searches' probe cells
    count as the cells they are."""
    plan = with_probes(plan, store)
    write_verdicts(plan, store, record_run=record_run)
    return render_report(plan, store, matrix_path=matrix_path)
