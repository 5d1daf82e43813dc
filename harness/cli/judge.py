"""Commands that judge: the cost what-if, the lock, the baseline, the gate, the regression check and the A/B
comparison."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from harness.cli import paths
from harness.cli.app import HistoryOption, LockDirOption, MatrixArg, OutOption, app, fail, run_async, setup_logging
from harness.cli.measure import RunRequest, run_matrix
from harness.errors import ConfigError, HarnessError

if TYPE_CHECKING:
    from harness.plan import Plan
    from harness.regress import PairedCheck
    from harness.store import Store
    from harness.verdict import Drift, Lock

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
    from harness.analysis import DEFAULT_TABLE, solve_what_if

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
    typer.echo(answer.describe(gpus))


def build_lock(plan: Plan, store: Store) -> Lock:
    """``harness.verdict.build_lock``, imported when called (``lock`` and ``baseline`` call it; tests replace it)."""
    from harness.verdict import build_lock as build

    return build(plan, store)


def _print_drift(committed_path: Path, current: Lock) -> None:
    from harness.verdict import drift, read_lock

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
    from harness.pipeline import load_plan
    from harness.store import Store
    from harness.verdict import write_lock

    try:
        the_plan = load_plan(matrix)
        store = Store(out, the_plan.matrix.name, lock_dir)
        current = build_lock(the_plan, store)
        _print_drift(store.committed_lock_path, current)
        typer.echo(f"run lock: {write_lock(current, store.run_lock_path)}")
        if update:
            typer.echo(f"committed lock: {write_lock(current, store.committed_lock_path)}")
    except HarnessError as exc:
        raise fail(exc) from exc


@app.command()
def baseline(matrix: MatrixArg, out: OutOption = Path("reports"), lock_dir: LockDirOption = Path("lock"),
             add_repeat: Annotated[bool, typer.Option("--add-repeat", help="add this run as one more repeat of "
                                                       "the existing baseline")] = False,
             allow_dirty: Annotated[bool, typer.Option("--allow-dirty", help="promote a run of uncommitted code "
                                                       "(the lock records it)")] = False) -> None:
    """Promote the stored run to lock/<matrix>.baseline.json, and write lock/<matrix>.lock.json beside it.

    Refused from a working tree with uncommitted changes unless ``--allow-dirty``: a baseline is the reference every
    later run is judged against, and a reference of code no commit holds cannot be reproduced."""
    from harness.pipeline import load_plan, with_probes
    from harness.store import Store
    from harness.verdict import MIN_LAUNCHES, GateError, promote, read_baseline, write_baseline, write_lock

    try:
        the_plan = load_plan(matrix)
        store = Store(out, the_plan.matrix.name, lock_dir)
        current = build_lock(the_plan, store)
        if current.harness.dirty and not allow_dirty:
            raise ConfigError(str(store.committed_lock_path), "harness.dirty",
                              f"the harness at {current.harness.commit or 'an unknown commit'} has uncommitted "
                              "changes, so this baseline could not be reproduced from any commit",
                              "commit (or stash) the changes and rerun the matrix, or pass --allow-dirty")
        path = store.baseline_path(the_plan.matrix.gates.baseline)
        previous = read_baseline(path).of(current.hardware.fingerprint) if add_repeat else None
        if add_repeat and previous is None:
            raise GateError(f"{path} holds no baseline of this machine ({current.hardware.fingerprint}) to add a run "
                            f"to; fix: promote one first (`harness baseline {matrix}` without --add-repeat)")
        # the searches' probes are promoted too: the gate judges each one this run visits again (one it does not
        # visit is not in its plan, so it cannot read as missing)
        promoted = promote(with_probes(the_plan, store), store, current, previous)
        typer.echo(f"baseline: {write_baseline(promoted, path)} for {promoted.hardware.fingerprint} "
                   f"({len(promoted.cells)} cells, {promoted.launches} launch(es) of each configuration at least, "
                   f"from {promoted.runs} run(s))")
        others = [b.hardware.fingerprint for b in read_baseline(path).machines if b.hardware != promoted.hardware]
        if others:
            typer.echo(f"  kept the baseline of: {'; '.join(others)}")
        if promoted.launches < MIN_LAUNCHES:
            typer.echo(f"warning: the gate needs {MIN_LAUNCHES} launches of each configuration to know its noise: "
                       f"add runs with `harness baseline {matrix} --add-repeat`, or promote a run made with "
                       f"`--launches {MIN_LAUNCHES}`", err=True)
        typer.echo(f"lock: {write_lock(current, store.committed_lock_path)}")
    except HarnessError as exc:
        raise fail(exc) from exc


BaselineOption = Annotated[Path | None, typer.Option(
    "--baseline", help="default: the matrix's gates.baseline, else lock/<matrix>.baseline.json",
    callback=paths.baseline_file)]
StrictOption = Annotated[bool, typer.Option("--strict", help="refuse a baseline from another harness version or "
                                            "machine instead of flagging it")]


@app.command()
def gate(matrix: MatrixArg, out: OutOption = Path("reports"), lock_dir: LockDirOption = Path("lock"),
         baseline_file: BaselineOption = None, strict: StrictOption = False, history: HistoryOption = None) -> None:
    """Judge the stored run against the baseline, metric by metric, with intervals from the launches.

    Exit 0 every check ok, 1 a regression (or a failed cell), 3 inconclusive (nothing regressed, but the launch
    noise of some figure is wider than the tolerance), 2 the gate could not compare (harness or input error)."""
    raise typer.Exit(_gate(matrix, out, lock_dir, baseline_file, strict, history))


def _gate(matrix: Path, out: Path, lock_dir: Path, baseline_file: Path | None, strict: bool,
          history: str | None = None) -> int:
    from harness.pipeline import load_plan, with_probes
    from harness.store import Store
    from harness.verdict import format_table, write_verdicts

    try:
        the_plan = load_plan(matrix)
        store = Store(out, the_plan.matrix.name, lock_dir, history)
        # the searches' probe cells count as the cells they are, as in the report's gate (pipeline.render)
        verdict = write_verdicts(with_probes(the_plan, store), store, baseline=baseline_file, strict=strict)
    except HarnessError as exc:
        raise fail(exc) from exc
    _print_verdict_drift(verdict.committed_lock, verdict.lock_committed, verdict.drift)
    state = verdict.history
    if state is not None:
        typer.echo(f"history: {state.error}" if state.error else
                   f"history: {state.url}: {state.runs} run(s) on this machine; {len(state.changed)} gated figure(s) "
                   f"stepped at the newest runs, {state.flat} flat")
    if verdict.result is None:
        typer.echo(f"error: {verdict.error}", err=True)
        return 2
    typer.echo(format_table(verdict.result, str(matrix)))
    if store.report_path.exists():
        typer.echo(f"report: {store.report_path}")
    return verdict.result.exit_code


AgainstOption = Annotated[str | None, typer.Option(
    "--against", help="re-measure this revision (commit, branch, tag) beside the work tree in paired rounds, instead "
                      "of judging against the committed baseline")]


@dataclass(frozen=True)
class PairedOptions:
    min_rounds: int
    max_rounds: int
    max_minutes: float
    seed: int | None
    repo: Path


@app.command()
def regress(matrix: MatrixArg, out: OutOption = Path("reports"), lock_dir: LockDirOption = Path("lock"),
            launches: Annotated[int, typer.Option("--launches", min=1, max=20,
                                                  help="server launches per configuration")] = 3,
            baseline_file: BaselineOption = None, strict: StrictOption = False, history: HistoryOption = None,
            against: AgainstOption = None,
            escalate: Annotated[bool, typer.Option(
                "--escalate", help="after the quick check against the committed baseline, re-measure the figures "
                                   "it left regressed or inconclusive in paired rounds beside the revision that "
                                   "made the baseline")] = False,
            min_rounds: Annotated[int, typer.Option("--min-rounds", min=2, max=40, help="paired rounds before the "
                                                    "first look")] = 3,
            max_rounds: Annotated[int, typer.Option("--max-rounds", min=2, max=40, help="paired rounds at most")] = 10,
            max_minutes: Annotated[float, typer.Option("--max-minutes", min=1, help="no paired round starts that "
                                                       "would end past this")] = 30,
            seed: Annotated[int | None, typer.Option("--seed", help="the rounds' order (default: drawn, and "
                                                     "printed)")] = None,
            repo: Annotated[Path, typer.Option("--repo", help="the repository whose revision is the reference "
                                               "(default: the one holding the current directory)")] = Path("."),
            budget_minutes: Annotated[float | None, typer.Option(
                "--budget-minutes", min=0, help="with --escalate: the whole command's minutes; the paired rounds "
                                                "get what the quick check left (none when under a minute)")] = None,
            ) -> None:
    """The regression check. By default: run the matrix afresh (never resumed: stale results would re-gate old
    numbers) on `--launches` interleaved launches, then gate it against the committed baseline. With `--against
    REV`: re-measure REV (its harness, matrix, lock and engines, in a worktree under build/) beside the work tree
    in paired rounds, order randomized and balanced, until every gated figure settles or a cap is reached. With
    `--escalate`: the quick check, then a paired check of only the figures it left doubtful. Exits with the gate's
    code (`make` turns every failure into 2, so CI calls this command for the code): 0 ok, 1 regressed or a cell
    failed, 3 inconclusive, 2 harness or input error, 130 interrupted."""
    if min_rounds > max_rounds:
        raise fail(ConfigError("--min-rounds", "--min-rounds", f"{min_rounds} is above --max-rounds {max_rounds}",
                               "lower --min-rounds or raise --max-rounds"))
    options = PairedOptions(min_rounds, max_rounds, max_minutes, seed, repo)
    if against is not None:
        raise typer.Exit(_paired(matrix, out, against, options))
    started = time.monotonic()
    ran = run_matrix(RunRequest(matrix, out, lock_dir, force=True, launches=launches, history=history))
    if ran in (2, 130):
        raise typer.Exit(ran)
    code = _gate(matrix, out, lock_dir, baseline_file, strict, history)
    if escalate and code in (1, 3):
        left = None if budget_minutes is None else budget_minutes - (time.monotonic() - started) / 60
        if left is not None and left < 1:
            typer.echo(f"\nno paired rounds: the quick check used the --budget-minutes {budget_minutes:g} (its "
                       "doubtful figures stand as it judged them; `harness regress MATRIX --against REV` settles "
                       "them without a budget)")
            raise typer.Exit(code)
        if left is not None:
            options = replace(options, max_minutes=min(options.max_minutes, round(left, 1)))
        code = _escalate(matrix, out, lock_dir, baseline_file, options, code)
    raise typer.Exit(code)


def _paired(matrix: Path, out: Path, against: str, options: PairedOptions,
            focus: tuple[tuple[str, str], ...] | None = None) -> int:
    from harness.regress import PairedRequest, format_paired, run_paired

    setup_logging()
    seed = options.seed if options.seed is not None else secrets.randbelow(10 ** 6)
    request = PairedRequest(matrix, against, out, options.repo,
                            (options.min_rounds, options.max_rounds, options.max_minutes), seed, focus)
    try:
        check = run_async(run_paired(request))
    except HarnessError as exc:
        raise fail(exc) from exc
    except (KeyboardInterrupt, asyncio.CancelledError):
        typer.echo("interrupted: no server is left running; the finished rounds and the verdict so far are on disk",
                   err=True)
        return 130
    typer.echo(format_paired(check))
    return check.result.exit_code


def _escalate(matrix: Path, out: Path, lock_dir: Path, baseline_file: Path | None, options: PairedOptions,
              code: int) -> int:
    """Pair the doubtful figures of the quick check against the baseline's revision; the merged verdict's code."""
    from harness.pipeline import load_plan
    from harness.regress import baseline_revision, doubtful_figures, merged
    from harness.store import Store
    from harness.verdict import read_gate, read_lock

    try:
        the_plan = load_plan(matrix)
        store = Store(out, the_plan.matrix.name, lock_dir)
        verdict, lock = read_gate(store), read_lock(store.run_lock_path)
        if verdict is None or verdict.result is None or lock is None:
            return code
        focus = doubtful_figures(verdict.result)
        if not focus:
            return code
        revision = baseline_revision(store.baseline_path(baseline_file or the_plan.matrix.gates.baseline),
                                     lock.hardware.fingerprint)
    except HarnessError as exc:
        raise fail(exc) from exc
    typer.echo(f"\nescalating {len(focus)} doubtful figure(s) to a paired check beside {revision[:12]}, the "
               "revision that made the baseline")
    paired = _paired(matrix, out, revision, options, focus)
    if paired == 130:
        return 130
    check = _saved_check(out, the_plan.matrix.name, revision)
    if check is None:
        return 2
    final = merged(verdict.result, check.result)
    typer.echo(f"\nescalated verdict: {final.verdict} (quick check, with its doubtful figures judged paired)")
    return final.exit_code


def _saved_check(out: Path, matrix_name: str, revision: str) -> PairedCheck | None:
    from pydantic import TypeAdapter

    from harness.regress import PairedCheck
    from harness.store import Store
    from harness.stored_files import load_or_set_aside

    return load_or_set_aside(Store(out, matrix_name).paired_dir(revision) / "paired.json",
                             TypeAdapter(PairedCheck).validate_json)


@app.command()
def compare(
    matrix_a: Annotated[Path, typer.Argument(help="A: the reference recipe or environment",
                                             callback=paths.matrix_file)],
    matrix_b: Annotated[Path, typer.Argument(help="B: the candidate, judged against A", callback=paths.matrix_file)],
    out: OutOption = Path("reports"),
    launches: Annotated[int, typer.Option("--launches", min=2, max=20, help="interleaved rounds (A and B "
                                          "launched once each per round)")] = 3,
    tolerance: Annotated[float | None, typer.Option(
        "--tolerance", help="relative change allowed, inside (0, 1) (default: B's gates.tolerance)")] = None,
) -> None:
    """A/B on one machine: run A and B interleaved launch by launch and judge B against A with paired (one-sided 95%)
    intervals. Exit 0 ok, 1 B regressed, 3 inconclusive, 2 harness or input error."""
    from harness.compare import format_compare, run_compare
    from harness.pipeline import validate

    setup_logging()
    try:
        plan_a, plan_b = validate(matrix_a, launching=True), validate(matrix_b, launching=True)
        spec = plan_b.matrix.gates
        if tolerance is not None:
            if not 0 < tolerance < 1:
                raise ConfigError("--tolerance", "tolerance", f"{tolerance} is outside (0, 1)",
                                  "pass a fraction such as 0.1 for ±10%")
            spec = spec.model_copy(update={"tolerance": tolerance})
        root = out / "compare" / f"{plan_a.matrix.name}-vs-{plan_b.matrix.name}"
        result = run_async(run_compare(plan_a, plan_b, root, launches=launches, spec=spec,
                                        sources=(str(matrix_a), str(matrix_b))))
    except HarnessError as exc:
        raise fail(exc) from exc
    except (KeyboardInterrupt, asyncio.CancelledError):
        typer.echo("interrupted: no server is left running; the finished launches are on disk", err=True)
        raise typer.Exit(130) from None
    typer.echo(format_compare(result))
    typer.echo(f"saved: {root / 'compare.json'}")
    raise typer.Exit(result.exit_code)


