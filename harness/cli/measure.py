"""Commands that measure: plan, run, report, fixtures, and the crosscheck of our client against vLLM's."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from harness.cli.app import (
    HistoryOption,
    LaunchesOption,
    LockDirOption,
    MatrixArg,
    OutOption,
    app,
    fail,
    run_async,
    setup_logging,
)
from harness.config import executor_models
from harness.errors import ConfigError, HarnessError

if TYPE_CHECKING:
    from harness.plan import Plan
    from harness.store import Store

log = logging.getLogger(__name__)

ExecutorOption = Annotated[str | None, typer.Option(
    "--executor", help=f"where server groups run ({' or '.join(executor_models())}); default: the matrix's `executor`")]
MaxParallelOption = Annotated[int | None, typer.Option(
    "--max-parallel", min=1, help="Slurm: server groups that may run at once (default: the matrix's)")]
LocalClusterOption = Annotated[bool, typer.Option(
    "--local-cluster", help="start a 2-node Slurm cluster on this machine for the run and stop it after "
                            "(implies --executor slurm; see docs/slurm.md)")]


@app.command()
def plan(matrix: MatrixArg,
         predict: Annotated[bool, typer.Option(help="predict every cell (TTFT, TPOT, tok/s, $/MTok) with the "
                                                    "predictor for its hardware")] = True) -> None:
    """Print every cell with its prediction, which cells share a server, and how many launches the run needs, and
    what it will cost. Launches nothing."""
    from harness.pipeline import deferred_workloads, read_deployments, validate
    from harness.predict import predict_plan
    from harness.report import render_plan

    try:
        the_plan = validate(matrix)
        predictions = predict_plan(the_plan) if predict else None
        described = asyncio.run(read_deployments(the_plan, str(matrix)))
    except HarnessError as exc:
        raise fail(exc) from exc
    typer.echo(render_plan(the_plan, predictions, described))
    waiting = deferred_workloads(the_plan)
    if waiting:
        typer.echo(f"\nchecked when their fixture is built (the tokenizer comes with it): {', '.join(waiting)}")


@app.command("predict")
def predict_matrix(matrix: MatrixArg, out: OutOption = Path("reports")) -> None:
    """Answer the matrix with its predictor alone: the predicted capstone (ship recipe, $/MTok, frontier, the cost
    levers beside the capstone lecture's claims), every figure labelled PREDICTED. Launches nothing; prints the
    report's path."""
    from harness.pipeline import validate
    from harness.predict import predict_plan, write_predictions
    from harness.report import predicted_report, write_predicted_report
    from harness.store import Store

    try:
        the_plan = validate(matrix)
        predictions = predict_plan(the_plan)
    except HarnessError as exc:
        raise fail(exc) from exc
    store = Store(out, the_plan.matrix.name)
    answered = sum(1 for cell in the_plan.cells if predictions.prediction(cell.cell_id))
    if not answered:
        raise fail(HarnessError(f"{matrix}: no cell could be predicted; `harness plan {matrix}` says why per cell"))
    write_predictions(predictions, store.predicted_cells_path)
    path = write_predicted_report(predicted_report(the_plan, predictions), store.predicted_report_path)
    typer.echo(f"predicted {answered} of {len(the_plan.cells)} cells ({', '.join(predictions.predictors)}); "
               "nothing was launched")
    typer.echo(str(path))


@app.command()
def run(matrix: MatrixArg, out: OutOption = Path("reports"),
        force: Annotated[bool, typer.Option("--force", help="rerun completed cells too")] = False,
        again: Annotated[bool, typer.Option("--again", help="once the stored run is complete (every cell ran), "
                                            "measure the matrix again as a new run of the history; an incomplete "
                                            "run is resumed (what `make bench` does)")] = False,
        lock_dir: LockDirOption = Path("lock"), launches: LaunchesOption = None, executor: ExecutorOption = None,
        max_parallel: MaxParallelOption = None, local_cluster: LocalClusterOption = False,
        history: HistoryOption = None,
        yes: Annotated[bool, typer.Option("--yes", help="run a plan whose estimate is beyond the matrix's "
                                          "estimate.max_machine_hours")] = False) -> None:
    """Run every incomplete cell of the matrix, then record the run in the results history, judge it, render its
    report and print the report's path."""
    raise typer.Exit(run_matrix(RunRequest(matrix, out, lock_dir, force=force, again=again, launches=launches,
                                           executor=executor, max_parallel=max_parallel, start_cluster=local_cluster,
                                           history=history, yes=yes)))


@contextlib.contextmanager
def maybe_cluster(start: bool) -> Iterator[None]:
    """A local 2-node Slurm cluster for the duration of the run, when asked; stopped on every exit path."""
    if not start:
        yield
        return
    from harness.cluster import local_cluster

    with tempfile.TemporaryDirectory(prefix="harness-slurm-") as root, local_cluster(Path(root)):
        yield


def _complete(plan: Plan, store: Store) -> bool:
    """Every cell of the stored run has a result (ok or failed): the run ran to its end."""
    from harness.pipeline import with_probes

    return store.read_run_stamp() is not None and all(
        store.read_result(cell) is not None for cell in with_probes(plan, store).cells)


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What `harness run` and `harness regress` ask of a run: the matrix, where its results and history go, and
    how to run it (the options travel together, so they are one object)."""

    matrix: Path
    out: Path = Path("reports")
    lock_dir: Path = Path("lock")
    force: bool = False
    again: bool = False
    launches: int | None = None
    executor: str | None = None
    max_parallel: int | None = None
    start_cluster: bool = False
    history: str | None = None
    yes: bool = False
    """Go on with a plan whose estimate is beyond the matrix's ``estimate.max_machine_hours``."""


def _doubts(plan: Plan, source: str, yes: bool) -> None:
    """Log what the plan asks that is implausible; refuse an estimate beyond the matrix's bound unless ``yes``."""
    from harness.analysis import estimate, implausible

    for finding in implausible(plan, estimate(plan)):
        if finding.key == "estimate.max_machine_hours" and not yes:
            raise ConfigError(source, finding.key, finding.problem, finding.fix)
        log.warning("%s: %s: %s (fix: %s)", source, finding.key, finding.problem, finding.fix)


def run_matrix(request: RunRequest) -> int:
    """Run the matrix; the exit code: 0 every cell ok, 1 some failed, 2 bad input (or a history that could not
    take the run: its results are in reports/ all the same), 130 interrupted."""
    from harness.pipeline import check_store_history, validate, with_probes
    from harness.store import Store, full_disk

    matrix, start_cluster, force = request.matrix, request.start_cluster, request.force
    setup_logging()
    try:
        the_plan = validate(matrix, out=request.out, lock_dir=request.lock_dir,
                            executor="slurm" if start_cluster else request.executor,
                            max_parallel=request.max_parallel, cluster_pending=start_cluster, launching=True)
        _doubts(the_plan, str(matrix), request.yes)
        store = Store(request.out, the_plan.matrix.name, request.lock_dir, request.history)
        check_store_history(store)
    except HarnessError as exc:
        raise fail(exc) from exc
    if request.again and not force and _complete(the_plan, store):
        typer.echo(f"the stored run of {the_plan.matrix.name} is complete: measuring it again as a new run")
        force = True
    try:
        # what runs the plan is imported once it passed (a refused matrix is answered without it); its module
        # brings the report's renderer and the verdict with it
        from harness.pipeline import preflight, render, run_plan
        from harness.store_writer import hold_store

        with hold_store(store.dir), maybe_cluster(start_cluster):  # a second run of this store is refused
            if start_cluster:  # the cluster this run started is up now: what the validation could not ask it
                preflight(the_plan, store, str(matrix))
            results = run_async(run_plan(the_plan, store, force=force, launches=request.launches,
                                              source=str(matrix)))
        report = render(the_plan, store, matrix_path=str(matrix), record_run=True)
    except HarnessError as exc:
        raise fail(exc) from exc
    except (KeyboardInterrupt, asyncio.CancelledError):
        typer.echo(f"interrupted: finished cells are kept under {store.dir}; rerun to resume", err=True)
        return 130
    except OSError as exc:
        if (full := full_disk(exc, request.out)) is None:
            raise
        raise fail(full) from exc
    failed = [r for r in results if r.status != "ok"]
    cells = len(with_probes(the_plan, store).cells)  # a search's probes are cells too
    typer.echo(f"{len(results)} cells run, {len(failed)} failed, {cells - len(results)} already complete")
    typer.echo(f"report: {report}")
    typer.echo(f"explorer: {store.explorer_path}")
    from harness.verdict import read_gate

    verdict = read_gate(store)
    state = verdict.history if verdict else None
    if state is not None and state.error:
        typer.echo(f"error: {state.error}", err=True)
        return 2
    if state is not None and state.recorded is not None:
        recorded = state.recorded
        typer.echo(f"history: {state.url}: {state.runs} run(s) of {the_plan.matrix.name} on this machine; this run "
                   f"added {recorded.added} cell(s), replaced {recorded.replaced}, already held {recorded.kept}")
    return 1 if failed else 0


@app.command()
def report(matrix: MatrixArg, out: OutOption = Path("reports"), lock_dir: LockDirOption = Path("lock"),
           history: HistoryOption = None,
           html: Annotated[bool, typer.Option("--html", help="also render report.html beside it")] = False,
           pdf: Annotated[bool, typer.Option("--pdf", help="also print it to report.pdf with a headless Chromium, "
                                             "and its pages to pages/page-N.png (implies --html)")] = False) -> None:
    """Judge the results already on disk and render the report and the explorer page beside it (runs no cell)."""
    from harness.pipeline import load_plan, render
    from harness.report import narrative_words, print_report, write_html
    from harness.store import Store

    try:
        the_plan = load_plan(matrix)
        store = Store(out, the_plan.matrix.name, lock_dir, history)
        path = render(the_plan, store, matrix_path=str(matrix))
        typer.echo(f"report: {path}\nexplorer: {store.explorer_path}")
        if pdf:
            printed = print_report(path, pngs=True)
            typer.echo(f"html: {path.with_suffix('.html')}\npdf: {printed.pdf} ({printed.pages} pages; the narrative "
                       f"{printed.narrative_pages} pages, {printed.narrative_words} words)")
            typer.echo(f"pages: {path.parent / 'pages'}")
        elif html:
            typer.echo(f"html: {write_html(path)} (the narrative {narrative_words(path.read_text())} words)")
    except HarnessError as exc:
        raise fail(exc) from exc


def build_fixtures(names: Iterable[str] | None = None) -> dict[str, Path]:
    """``harness.fixtures.build_fixtures``, imported when called (the command's one call, which tests replace)."""
    from harness.fixtures import build_fixtures as build

    return build(names)


@app.command()
def fixtures(matrix: Annotated[Path | None, typer.Argument(
        help="build only the fixtures this matrix's servers load (default: every fixture)")] = None) -> None:
    """Build the project's tiny MoE checkpoints (cached by content: a second call does nothing)."""
    from harness.pipeline import load_plan
    from harness.servers import fixture_names

    setup_logging()
    # The build is torch work in this process: SIGTERM must unwind like Ctrl-C, so the model being trained leaves no
    # temporary directory behind (as ``python -m harness.fixtures`` does)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        built = build_fixtures() if matrix is None else build_fixtures(
            set().union(*(fixture_names(g.server) for g in load_plan(matrix).groups)))
        for name, path in built.items():
            typer.echo(f"{name}: {path}")
    except HarnessError as exc:
        raise fail(exc) from exc
    finally:
        signal.signal(signal.SIGTERM, previous)


# --- measurement fidelity: our client beside vLLM's -----------------------------------------------------------


@app.command()
def crosscheck(
    matrix: MatrixArg, out: OutOption = Path("reports"),
    base_url: Annotated[str | None, typer.Option("--base-url", help="a running server; default: launch the "
                                                 "cell's server and reap it after")] = None,
    server: Annotated[str | None, typer.Option(
        "--server", help="part of a server label, e.g. qwen3-moe/vllm/bf16/tp1/off")] = None,
    workload: Annotated[str | None, typer.Option("--workload", help="a random workload of the matrix")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1)] = None,
    num_requests: Annotated[int | None, typer.Option("--num-requests", min=1)] = None,
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="interleaved rounds of both clients")] = 3,
    tolerance: Annotated[float, typer.Option("--tolerance", min=0, help="allowed |ratio - 1|")] = 0.05,
    client: Annotated[str, typer.Option(
        "--client", help="the peer client beside ours: vllm (vLLM's `vllm bench serve`), or one `make peers` "
                         "installs under build/peers/ (aiperf, guidellm, inference-perf)")] = "vllm",
) -> None:
    """Run our client and a peer's (vLLM's `vllm bench serve` by default) against the same server, interleaved;
    print the ratios.

    Exit 0 when every ratio (median TTFT, median TPOT, mean ITL, output throughput) is within 1 ± tolerance; 2 when
    the peer is unknown or not installed (`make peers`).
    """
    from harness.crosscheck import crosscheck_cell, pick_cell
    from harness.crosscheck_result import format_result, write_crosscheck
    from harness.pipeline import load_plan
    from harness.store import Store

    setup_logging()
    try:
        the_plan = load_plan(matrix)
        cell = pick_cell(the_plan, server=server, workload=workload, concurrency=concurrency,
                         num_requests=num_requests, source=str(matrix))
        store = Store(out, the_plan.matrix.name)
        result = run_async(crosscheck_cell(cell, base_url=base_url, rounds=rounds, log_dir=store.crosscheck_dir,
                                           client=client))
    except HarnessError as exc:
        raise fail(exc) from exc
    typer.echo(f"cell: {cell.label}")
    typer.echo(format_result(result, tolerance))
    typer.echo(f"saved: {write_crosscheck(result, store)}")
    if not result.within(tolerance):
        raise typer.Exit(1)
