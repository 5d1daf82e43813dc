"""Command line: each command parses its arguments and makes one library call. The matrix YAML is the interface.

Exit codes: 0 success, 1 the run finished but some cells failed (gate, compare: a regression), 2 a harness or input
error (nothing launched for a bad matrix), 3 (gate, compare) inconclusive: nothing regressed but some figure's
launch noise is wider than the tolerance, 130 interrupted (finished launches are kept; rerun to resume).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from harness.analysis.cost import DEFAULT_TABLE, solve_what_if
from harness.compare import format_compare, run_compare
from harness.crosscheck import crosscheck_cell, format_result, pick_cell, write_crosscheck
from harness.errors import ConfigError, HarnessError
from harness.fixtures import build_fixtures
from harness.pipeline import load_plan, render, run_plan
from harness.report.plan_view import render_plan
from harness.store import Store
from harness.verdict.baseline import MIN_LAUNCHES, promote, read_baseline, write_baseline
from harness.verdict.gate import format_table
from harness.verdict.lock import Drift, Lock, build_lock, drift, read_lock, write_lock
from harness.verdict.stage import write_verdicts

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Benchmark MoE serving recipes on vLLM/SGLang.")
log = logging.getLogger("harness")
T = TypeVar("T")

MatrixArg = Annotated[Path, typer.Argument(help="matrix YAML, e.g. matrices/default.yaml")]
OutOption = Annotated[Path, typer.Option("--out", help="reports root", envvar="HARNESS_REPORTS_DIR")]
LockDirOption = Annotated[Path, typer.Option("--lock-dir", help="committed locks and baselines",
                                             envvar="HARNESS_LOCK_DIR")]
LaunchesOption = Annotated[int | None, typer.Option(
    "--launches", min=1, max=20, help="server launches per configuration, in interleaved rounds (default: the "
                                      "matrix's `launches`); a baseline needs 3 or more")]


def _setup_logging() -> None:
    logging.basicConfig(level=os.environ.get("HARNESS_LOG_LEVEL", "INFO"), stream=sys.stderr,
                        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the progress


def _fail(exc: HarnessError) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    return typer.Exit(2)


def _run_async(coro: Coroutine[Any, Any, T]) -> T:
    """asyncio.run, with SIGTERM handled like Ctrl-C: the main task is cancelled and unwinds (servers reaped)."""

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        return await coro

    return asyncio.run(main())


@app.command()
def plan(matrix: MatrixArg) -> None:
    """Print every cell, which cells share a server, and how many launches the run needs. Launches nothing."""
    try:
        the_plan = load_plan(matrix)
    except HarnessError as exc:
        raise _fail(exc) from exc
    typer.echo(render_plan(the_plan))


@app.command()
def run(matrix: MatrixArg, out: OutOption = Path("reports"),
        force: Annotated[bool, typer.Option("--force", help="rerun completed cells too")] = False,
        lock_dir: LockDirOption = Path("lock"), launches: LaunchesOption = None) -> None:
    """Run every incomplete cell of the matrix, then render its report and print the report's path."""
    _setup_logging()
    try:
        the_plan = load_plan(matrix)
    except HarnessError as exc:
        raise _fail(exc) from exc
    store = Store(out, the_plan.matrix.name, lock_dir)
    try:
        results = _run_async(run_plan(the_plan, store, force=force, launches=launches))
        report = render(the_plan, store, matrix_path=str(matrix))
    except HarnessError as exc:
        raise _fail(exc) from exc
    except (KeyboardInterrupt, asyncio.CancelledError):
        typer.echo(f"interrupted: finished cells are kept under {store.dir}; rerun to resume", err=True)
        raise typer.Exit(130) from None
    failed = [r for r in results if r.status != "ok"]
    ran = len(results)
    typer.echo(f"{ran} cells run, {len(failed)} failed, {len(the_plan.cells) - ran} already complete")
    typer.echo(f"report: {report}")
    if failed:
        raise typer.Exit(1)


@app.command()
def report(matrix: MatrixArg, out: OutOption = Path("reports"), lock_dir: LockDirOption = Path("lock")) -> None:
    """Judge the results already on disk and render the report (runs no cell)."""
    try:
        the_plan = load_plan(matrix)
        store = Store(out, the_plan.matrix.name, lock_dir)
        typer.echo(f"report: {render(the_plan, store, matrix_path=str(matrix))}")
    except HarnessError as exc:
        raise _fail(exc) from exc


@app.command()
def fixtures() -> None:
    """Build the project's tiny MoE checkpoints (cached by content: a second call does nothing)."""
    _setup_logging()
    try:
        for name, path in build_fixtures().items():
            typer.echo(f"{name}: {path}")
    except HarnessError as exc:
        raise _fail(exc) from exc


# --- capstone: cost what-if, lock, baseline, gate -------------------------------------------------------------

@app.command()
def cost(
    gpus: Annotated[int, typer.Option("--gpus", min=1, help="devices per replica")] = 1,
    gpu: Annotated[str | None, typer.Option("--gpu", help="take the price from the cost table, e.g. B200")] = None,
    usd_per_gpu_hour: Annotated[float | None, typer.Option("--usd-per-gpu-hour", min=0)] = None,
    replica_usd_per_hour: Annotated[float | None, typer.Option("--replica-usd-per-hour", min=0)] = None,
    tok_s: Annotated[float | None, typer.Option("--tok-s", min=0, help="output tok/s per replica")] = None,
    usd_per_mtok: Annotated[float | None, typer.Option("--usd-per-mtok", min=0, help="target $/MTok")] = None,
) -> None:
    """What-if: $/MTok from GPUs x price and tok/s, or the tok/s (or price) a target $/MTok needs."""
    if gpu is not None:
        entry = next((v for k, v in DEFAULT_TABLE.items() if k.lower() == gpu.lower()), None)
        if entry is None:
            typer.echo(f"error: no price for {gpu!r}; the table has {', '.join(DEFAULT_TABLE)}", err=True)
            raise typer.Exit(2)
        usd_per_gpu_hour = usd_per_gpu_hour or entry.usd_per_hour
    replica = replica_usd_per_hour or (gpus * usd_per_gpu_hour if usd_per_gpu_hour is not None else None)
    try:
        answer = solve_what_if(replica, tok_s, usd_per_mtok)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    per_gpu = answer.replica_usd_per_hour / gpus
    marks = {answer.solved: "   <- solved"}
    typer.echo(f"replica:    {gpus} x ${per_gpu:,.2f}/GPU-hour = ${answer.replica_usd_per_hour:,.2f}/hour"
               f"{marks.get('replica_usd_per_hour', '')}")
    typer.echo(f"throughput: {answer.tok_s:,.0f} tok/s ({answer.tok_s / gpus:,.1f} tok/s per GPU)"
               f"{marks.get('tok_s', '')}")
    typer.echo(f"$/MTok:     ${answer.usd_per_mtok:,.3f}{marks.get('usd_per_mtok', '')}")
    typer.echo("formula:    $/MTok = replica $/hour x 10^6 / (3600 x tok/s)")


def _print_drift(committed_path: Path, current: Lock) -> None:
    committed = read_lock(committed_path)
    _print_verdict_drift(str(committed_path), committed is not None, drift(committed, current) if committed else [])


def _print_verdict_drift(committed_path: str, committed: bool, changes: Sequence[Drift]) -> None:
    if not committed:
        typer.echo(f"lock: none committed at {committed_path}; `harness baseline` writes one")
        return
    typer.echo(f"lock: {'no drift from' if not changes else f'{len(changes)} field(s) drifted from'} {committed_path}")
    for change in changes:
        typer.echo(f"  drift: {change.field}: locked {change.locked!r}, now {change.current!r}")


@app.command()
def lock(matrix: MatrixArg, out: OutOption = Path("reports"), lock_dir: LockDirOption = Path("lock"),
         update: Annotated[bool, typer.Option("--update", help="write the committed lock")] = False) -> None:
    """Record this environment and the stored run; say plainly what drifted from the committed lock."""
    try:
        the_plan = load_plan(matrix)
        store = Store(out, the_plan.matrix.name, lock_dir)
        current = build_lock(the_plan, store)
        _print_drift(store.committed_lock_path, current)
        typer.echo(f"run lock: {write_lock(current, store.run_lock_path)}")
        if update:
            typer.echo(f"committed lock: {write_lock(current, store.committed_lock_path)}")
    except HarnessError as exc:
        raise _fail(exc) from exc


@app.command()
def baseline(matrix: MatrixArg, out: OutOption = Path("reports"), lock_dir: LockDirOption = Path("lock"),
             add_repeat: Annotated[bool, typer.Option("--add-repeat", help="add this run as one more repeat of "
                                                       "the existing baseline")] = False) -> None:
    """Promote the stored run to lock/<matrix>.baseline.json, and write lock/<matrix>.lock.json beside it."""
    try:
        the_plan = load_plan(matrix)
        store = Store(out, the_plan.matrix.name, lock_dir)
        current = build_lock(the_plan, store)
        path = store.baseline_path(the_plan.matrix.gates.baseline)
        previous = read_baseline(path) if add_repeat else None
        promoted = promote(the_plan, store, current, previous)
        typer.echo(f"baseline: {write_baseline(promoted, path)} ({len(promoted.cells)} cells, "
                   f"{promoted.launches} launch(es) of each configuration at least, from {promoted.runs} run(s))")
        if promoted.launches < MIN_LAUNCHES:
            typer.echo(f"warning: the gate needs {MIN_LAUNCHES} launches of each configuration to know its noise: "
                       f"add runs with `harness baseline {matrix} --add-repeat`, or promote a run made with "
                       f"`--launches {MIN_LAUNCHES}`", err=True)
        typer.echo(f"lock: {write_lock(current, store.committed_lock_path)}")
    except HarnessError as exc:
        raise _fail(exc) from exc


@app.command()
def gate(matrix: MatrixArg, out: OutOption = Path("reports"), lock_dir: LockDirOption = Path("lock"),
         baseline_file: Annotated[Path | None, typer.Option(
             "--baseline", help="default: the matrix's gates.baseline, else lock/<matrix>.baseline.json")] = None,
         strict: Annotated[bool, typer.Option("--strict", help="refuse a baseline from another harness version "
                                              "or machine instead of flagging it")] = False) -> None:
    """Judge the stored run against the baseline, metric by metric, with intervals from the launches.

    Exit 0 every check ok, 1 a regression (or a failed cell), 3 inconclusive (nothing regressed, but the launch
    noise of some figure is wider than the tolerance), 2 the gate could not compare (harness or input error)."""
    try:
        the_plan = load_plan(matrix)
        store = Store(out, the_plan.matrix.name, lock_dir)
        verdict = write_verdicts(the_plan, store, baseline=baseline_file, strict=strict)
    except HarnessError as exc:
        raise _fail(exc) from exc
    _print_verdict_drift(verdict.committed_lock, verdict.lock_committed, verdict.drift)
    if verdict.result is None:
        typer.echo(f"error: {verdict.error}", err=True)
        raise typer.Exit(2)
    result = verdict.result
    typer.echo(format_table(result))
    if store.report_path.exists():
        typer.echo(f"report: {store.report_path}")
    raise typer.Exit(result.exit_code)


@app.command()
def compare(
    matrix_a: Annotated[Path, typer.Argument(help="A: the reference recipe or environment")],
    matrix_b: Annotated[Path, typer.Argument(help="B: the candidate, judged against A")],
    out: OutOption = Path("reports"),
    launches: Annotated[int, typer.Option("--launches", min=2, max=20, help="interleaved rounds (A and B "
                                          "launched once each per round)")] = 3,
    tolerance: Annotated[float | None, typer.Option(
        "--tolerance", help="relative change allowed, inside (0, 1) (default: B's gates.tolerance)")] = None,
) -> None:
    """A/B on one machine: run A and B interleaved launch by launch and judge B against A with paired (one-sided 95%)
    intervals. Exit 0 ok, 1 B regressed, 3 inconclusive, 2 harness or input error."""
    _setup_logging()
    try:
        plan_a, plan_b = load_plan(matrix_a), load_plan(matrix_b)
        spec = plan_b.matrix.gates
        if tolerance is not None:
            if not 0 < tolerance < 1:
                raise ConfigError("--tolerance", "tolerance", f"{tolerance} is outside (0, 1)",
                                  "pass a fraction such as 0.1 for ±10%")
            spec = spec.model_copy(update={"tolerance": tolerance})
        root = out / "compare" / f"{plan_a.matrix.name}-vs-{plan_b.matrix.name}"
        result = _run_async(run_compare(plan_a, plan_b, root, launches=launches, spec=spec,
                                        sources=(str(matrix_a), str(matrix_b))))
    except HarnessError as exc:
        raise _fail(exc) from exc
    except (KeyboardInterrupt, asyncio.CancelledError):
        typer.echo("interrupted: no server is left running; the finished launches are on disk", err=True)
        raise typer.Exit(130) from None
    typer.echo(format_compare(result))
    typer.echo(f"saved: {root / 'compare.json'}")
    raise typer.Exit(result.exit_code)


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
) -> None:
    """Run our client and vLLM's `vllm bench serve` against the same server, interleaved; print the ratios.

    Exit 0 when every ratio (median TTFT, median TPOT, mean ITL, output throughput) is within 1 ± tolerance.
    """
    _setup_logging()
    try:
        the_plan = load_plan(matrix)
        cell = pick_cell(the_plan, server=server, workload=workload, concurrency=concurrency,
                         num_requests=num_requests, source=str(matrix))
        store = Store(out, the_plan.matrix.name)
        result = _run_async(crosscheck_cell(cell, base_url=base_url, rounds=rounds, log_dir=store.crosscheck_dir))
    except HarnessError as exc:
        raise _fail(exc) from exc
    typer.echo(f"cell: {cell.label}")
    typer.echo(format_result(result, tolerance))
    typer.echo(f"saved: {write_crosscheck(result, store)}")
    if not result.within(tolerance):
        raise typer.Exit(1)
