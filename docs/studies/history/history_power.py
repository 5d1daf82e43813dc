"""How much history the gate's history rule needs, and how often it cries wolf, per gated run: simulated over the
launch noise measured on this machine.

The gate's history rule (``harness.history.trend``) looks for Apache Otava change points in each gated figure's
series over runs (each run's value is the geometric mean of its server launches: one launch per run in ``make
bench``). It calls the newest run ``regressed`` (``improved``) when a change point lies among the newest ``recent``
runs AND has persisted, i.e. its index satisfies ``n - recent <= index <= n - persist`` (defaults 4 and 2: the step
has held for at least 2 runs, the gated one included), and steps beyond the tolerance; Otava locates each change
point and ``harness.history.changes`` re-tests its step (Student's t with the sample standard deviations), the
re-tested p-value being the one held to ``max_pvalue``. All the figures of one gated run are judged together
(``judge_trends``): a regressed or improved verdict must also pass Benjamini-Hochberg at ``max_pvalue`` over every
judged series of the run, else it is demoted to ``step``.

A simulated gated run is ``--figures`` (default 96: about 16 cells x 6 gated metrics in ``make bench``) independent
series of ``output_throughput`` (higher is better), each a history of runs drawn from the noise model, judged
together by ``judge_trends`` on the newest run. Independent series are the conservative case for false alarms: the
real figures of a cell, and the cells of one launch, move together. The script asks:

(a) false alarms: on clean history of N runs (``--lengths``), the share of gated runs with ANY figure judged
    ``regressed`` or ``improved`` (and ``regressed`` alone, which fails the gate), and the per-figure rate, before
    and after the Benjamini-Hochberg demotion;
(b) power, recipe-wide slowdown: with ``PRE`` clean runs and then every figure's throughput x ``--step`` (0.75: a
    slower engine slows every cell), the share of the stepped figures judged ``regressed``, and the chance at least
    half of them are (and that any is: the gate fails the run), at the 1st-4th run after the step; "by" is at any of
    those runs (a trial grows run by run; after the 4th the step leaves the ``recent`` window);
(c) power, one figure alone: the same step in one figure among ``figures - 1`` clean ones: the chance it is judged
    ``regressed`` at the 1st-4th run after, and by the 4th.

Every verdict is the real one: each simulated figure is a ``harness.history.Series`` of ``Point``/``RunInfo`` objects
(``machine_s`` None, so the machine-speed rule is off) and each gated run one ``judge_trends`` call with the gate's
tolerance and ``HistorySpec`` (only ``max_pvalue`` varied). The one liberty: ``change_points`` (Otava's location and
the re-test), a pure function of a series' values and max_pvalue, is memoised inside ``harness.history.trend`` for
the run of this script, so a series judged twice (a clean companion at the same length in (a) and (c)) costs one
call. These are simulations over measured launch noise, not new launches.

Noise models: ``pool`` resamples the per-launch log-ratios of ``output_throughput`` to their cell's geometric mean in
the committed baselines (``lock/default.baseline.json``, ``lock/regress.baseline.json``; cells with status ok and 3+
launches, the machine entry matching this machine's CPU), each scaled by sqrt(n / (n - 1)) so the pool's sd is the
launch sd rather than the smaller sd of residuals around an n-launch mean, drawn as a smoothed bootstrap: each value
drawn plus normal noise of sd ``--jitter`` (default Silverman's rule, 0.034 for the 81 launches here), shrunk to
keep the pool's sd. Resampled as they are, 81 values repeat within a short segment (the two newest runs hold the
same value 1 time in 81): a segment without spread, a re-tested p-value far too small (0, which survives any
Benjamini-Hochberg threshold, when the other side has no spread either), and false change points that measured runs
never show. ``--db URL`` takes the pool from a history database instead (each run's value against its series'
geometric mean, series of 3+ runs on this machine), falling back to the baselines when it holds too few runs. Each
``--noise-sd`` adds a lognormal model (sd of the log figure). Draws are seeded and shared across max_pvalue
settings, so settings are compared on the same histories.

Trials (per noise model, the same at every max_pvalue): ``--clean-runs`` clean gated runs, each judged at every
length of (a); ``--slow-runs`` gated runs for (b), each judged at every (pre, post); ``--alone-trials`` stepped
figures for (c), trial t judged beside the clean companions of clean run ``t % --companion-sets`` (the companion
sets are shared between trials so that (c) costs few Otava calls: a companion series is judged once per length).

    .venv/bin/python docs/studies/history/history_power.py [--max-pvalue 0.01 0.005 0.001] [--noise-sd 0.10 0.18] \\
        [--figures 96] [--clean-runs 24] [--slow-runs 2] [--alone-trials 40] [--companion-sets 4] [--seed 0] \\
        [--jitter SD] [--db sqlite:///reports/history.sqlite]

``--slow-runs 0`` or ``--alone-trials 0`` skips (b) or (c). Cost: a change-point call (Otava and the re-test) on a
series of 4-20 runs took 0.8-2 ms on the 2-core AMD EPYC VM with a ``make bench`` beside it (less at a smaller
max_pvalue), so a gated run of 96 new series about 0.1-0.2 s. The defaults make, per noise model and max_pvalue, 120
gated runs in (a), 40 in (b) and 800 in (c) (whose companions are cached: 4 sets x 12 further lengths x 95 series),
20,720 calls in 17-42 s; all three max_pvalues over the three noise models took 4 min 6 s there
(``docs/studies/history.md``), and ``--noise-sd --clean-runs 120 --slow-runs 0 --alone-trials 160
--companion-sets 8`` (the pool alone, tighter) 4 min 33 s.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import numpy as np

import harness.history.trend as trend_module
from harness.config.gates import GateSpec, HistorySpec
from harness.history import Change, Point, RunInfo, Series, Trend, change_points, judge_trends
from harness.host import hardware_info

METRIC = "output_throughput"
BASELINES = (Path("lock/default.baseline.json"), Path("lock/regress.baseline.json"))
LEVEL = 1000.0
"""Throughput of the simulated cell, tok/s (any level: Otava works on the logs)."""


@dataclass(frozen=True)
class Pool:
    """Per-launch (or per-run) log-ratios to their cell's geometric mean, and where they came from."""

    logs: np.ndarray
    source: str
    groups: int
    raw_sd: float

    @property
    def sd(self) -> float:
        return float(np.sqrt(np.mean(self.logs ** 2)))

    @property
    def bandwidth(self) -> float:
        """Silverman's rule of thumb for the kernel of the smoothed bootstrap."""
        iqr = float(np.subtract(*np.percentile(self.logs, [75, 25])))
        return float(0.9 * min(self.sd, iqr / 1.34) * len(self.logs) ** -0.2)

    def draw(self, rng: np.random.Generator, size: tuple[int, ...], jitter: float) -> np.ndarray:
        """A smoothed bootstrap: pool values drawn with replacement, each plus normal noise of sd ``jitter``,
        shrunk so the sd stays the pool's."""
        drawn = rng.choice(self.logs, size=size)
        if jitter > 0:
            drawn = (drawn + rng.normal(0.0, jitter, size=size)) / math.sqrt(1 + (jitter / self.sd) ** 2)
        return drawn


def _residuals(groups: list[list[float]]) -> tuple[np.ndarray, float]:
    """Pooled log-ratios of each group's values to the group's geometric mean, scaled by sqrt(n / (n - 1)); and the
    unscaled pooled sd."""
    scaled, raw = [], []
    for values in groups:
        logs = np.log(np.asarray(values, dtype=float))
        res = logs - logs.mean()
        raw.extend(res)
        scaled.extend(res * math.sqrt(len(logs) / (len(logs) - 1)))
    return np.asarray(scaled), float(np.sqrt(np.mean(np.square(raw))))


def baseline_pool(paths: list[Path], machine: str | None) -> Pool:
    """The launch noise pool of the baselines' machine entries named ``machine`` (None: every machine)."""
    groups: list[list[float]] = []
    used: list[str] = []
    for path in paths:
        data = json.loads(path.read_text())
        for entry in data["machines"]:
            name = entry["hardware"]["name"]
            if machine is not None and name != machine:
                continue
            found = 0
            for cell in entry["cells"].values():
                values = [v for v in (cell.get("values") or {}).get(METRIC) or [] if v is not None and v > 0]
                if cell.get("status") == "ok" and len(values) >= 3:
                    groups.append(values)
                    found += 1
            if found:
                used.append(f"{path} [{name}]: {found} cells")
    if not groups:
        raise SystemExit(f"no cell with 3+ launches of {METRIC} in {', '.join(map(str, paths))} for machine "
                         f"{machine!r}; pass --machine all, or another name")
    logs, raw = _residuals(groups)
    return Pool(logs, "; ".join(used), len(groups), raw)


def db_pool(url: str, matrix: str | None, machine: str | None) -> Pool | None:
    """The run-to-run noise pool of a history database: each run's value of METRIC against its series' geometric
    mean, series of 3+ runs on ``machine`` (a fingerprint; None: this machine's). None when there are none."""
    from harness.history import holdings, opened, read_series

    fingerprint = machine or hardware_info().fingerprint
    groups: list[list[float]] = []
    short = 0
    with opened(url) as engine:
        held = [h for h in holdings(engine) if h.machine == fingerprint and (matrix is None or h.matrix == matrix)]
        for h in held:
            for series in read_series(engine, h.matrix, h.machine, [METRIC]):
                values = [v for v in series.values if v > 0]
                if len(values) >= 3:
                    groups.append(values)
                else:
                    short += 1
    if not groups:
        print(f"history database: no series of {METRIC} with 3+ runs on {fingerprint!r} ({short} shorter series, "
              f"matrices {', '.join(h.matrix for h in held) or 'none'}); falling back to the baselines\n")
        return None
    logs, raw = _residuals(groups)
    return Pool(logs, f"{url} [{fingerprint}]: {len(groups)} series of 3+ runs ({short} shorter skipped)",
                len(groups), raw)


class Otava:
    """``change_points`` memoised (a pure function of the values and max_pvalue), with the calls it made."""

    def __init__(self) -> None:
        self.cache: dict[tuple[tuple[float, ...], float, float], tuple[Change, ...]] = {}
        self.calls = 0

    def __call__(self, values: Sequence[float], *, max_pvalue: float, min_magnitude: float = 0.0) -> list[Change]:
        key = (tuple(values), max_pvalue, min_magnitude)
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = tuple(change_points(values, max_pvalue=max_pvalue, min_magnitude=min_magnitude))
            self.calls += 1
        return list(found)


@functools.cache
def runs(n: int) -> tuple[RunInfo, ...]:
    """The first ``n`` runs of the simulated matrix (the same runs for every figure, as in one history)."""
    return tuple(RunInfo(f"run-{i}", f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}", None, {}, None) for i in range(n))


def as_series(rows: np.ndarray, first: int = 0) -> list[Series]:
    """Each row of ``rows`` (figures x runs, oldest first) a figure's one-launch-per-run series, numbered from
    ``first``."""
    run = runs(rows.shape[1])
    return [Series(f"cell-{j}", f"figure {j}", METRIC,
                   tuple(Point(r, (float(v),)) for r, v in zip(run, row, strict=True)))
            for j, row in enumerate(rows, first)]


def gated(series: list[Series], tolerance: float, spec: HistorySpec) -> tuple[Trend, ...]:
    """One gated run: every figure's series judged together on the newest run."""
    return judge_trends(series, {METRIC: "higher"}, tolerance, spec, series[0].points[-1].run.run_key)


def demoted(trend: Trend) -> bool:
    """A regressed or improved verdict that Benjamini-Hochberg over the run's figures turned into ``step``."""
    return trend.verdict == "step" and "Benjamini-Hochberg" in trend.note


def regressed_before(trend: Trend) -> bool:
    """Regressed on its own series, before the run's figures were held together."""
    return trend.verdict == "regressed" or (demoted(trend) and trend.step is not None and trend.step.ratio < 1)


def clean(values: np.ndarray, lengths: list[int], tolerance: float, spec: HistorySpec) -> dict[int, dict[str, float]]:
    """Per history length: of the clean gated runs ``values`` (runs x figures x runs of history), the share with a
    false verdict (regressed or improved) on any figure, with a regressed one; and the per-figure rates."""
    out = {}
    for n in lengths:
        counts = dict.fromkeys(("run", "run_regressed", "figure", "figure_before"), 0)
        for run in values:
            trends = gated(as_series(run[:, :n]), tolerance, spec)
            false = sum(t.verdict in ("regressed", "improved") for t in trends)
            counts["run"] += false > 0
            counts["run_regressed"] += any(t.verdict == "regressed" for t in trends)
            counts["figure"] += false
            counts["figure_before"] += false + sum(map(demoted, trends))
        figures = len(values) * values.shape[1]
        out[n] = {key: count / (figures if key.startswith("figure") else len(values)) for key, count in counts.items()}
    return out


def slowdown(values: np.ndarray, pres: list[int], posts: list[int], step: float, tolerance: float,
             spec: HistorySpec) -> dict[tuple[int, int], np.ndarray]:
    """Per (pre, post): per gated run and figure, whether the figure is judged regressed when every figure of
    ``values`` (runs x figures x runs of history) steps by ``step`` at run ``pre``."""
    out = {}
    for pre in pres:
        for post in posts:
            hits = np.zeros(values.shape[:2], dtype=bool)
            for t, run in enumerate(values):
                rows = run[:, :pre + post].copy()
                rows[:, pre:] *= step
                hits[t] = [trend.verdict == "regressed" for trend in gated(as_series(rows), tolerance, spec)]
            out[(pre, post)] = hits
    return out


def alone(stepped: np.ndarray, companions: np.ndarray, pres: list[int], posts: list[int], step: float,
          tolerance: float, spec: HistorySpec) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]:
    """Per (pre, post): per trial, whether the one stepped figure (row t of ``stepped``) is judged regressed beside
    the clean figures 1.. of companion set ``t % len(companions)``; and whether it was on its own series, before
    Benjamini-Hochberg."""
    out = {}
    clean_series = functools.cache(lambda c, n: as_series(companions[c, 1:, :n], 1))
    for pre in pres:
        for post in posts:
            n = pre + post
            hits = np.zeros(len(stepped), dtype=bool)
            before = np.zeros(len(stepped), dtype=bool)
            for t, row in enumerate(stepped):
                figure = row[:n].copy()
                figure[pre:] *= step
                trend = gated(as_series(figure[None]) + clean_series(t % len(companions), n), tolerance, spec)[0]
                hits[t], before[t] = trend.verdict == "regressed", regressed_before(trend)
            out[(pre, post)] = hits, before
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def needed(rates: dict[int, float], target: float) -> str:
    """The fewest clean runs before the step whose detection rate, and every longer history's of the grid, reaches
    ``target``; with the best rate of the grid."""
    ok = [pre for pre in rates if all(rate >= target for p, rate in rates.items() if p >= pre)]
    best = f"best {_pct(max(rates.values()))}"
    return f"{min(ok)} ({best})" if ok else f"none up to {max(rates)} ({best})"


def table(title: str, first: str, cells: dict[str, dict[int, str]]) -> None:
    """A markdown table: a row per key of each model's ``cells``, a column per model."""
    print(f"{title}\n")
    print(f"| {first} | " + " | ".join(cells) + " |")
    print("|---:|" + "---|" * len(cells))
    for key in next(iter(cells.values())):
        print(f"| {key} | " + " | ".join(column[key] for column in cells.values()) + " |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baselines", type=Path, nargs="+", default=list(BASELINES))
    parser.add_argument("--machine", default=None,
                        help="baseline machine name (or history fingerprint with --db) to take the noise of; "
                             "default this machine's; 'all' pools every machine of the baselines")
    parser.add_argument("--db", help="history database URL to take the noise pool from (runs of 3+ per series)")
    parser.add_argument("--matrix", help="with --db: only this matrix's series (default: every matrix)")
    parser.add_argument("--noise-sd", type=float, nargs="*", default=[0.10, 0.18],
                        help="lognormal noise models to run beside the pool: sd of the log of a run's figure")
    parser.add_argument("--no-pool", action="store_true", help="run the --noise-sd models only")
    parser.add_argument("--jitter", type=float, default=None,
                        help="sd of the normal kernel added to each value drawn from the pool (default: Silverman's "
                             "rule); 0 resamples the pool as is, whose repeated values make zero-variance segments")
    parser.add_argument("--max-pvalue", type=float, nargs="+", default=[HistorySpec().max_pvalue])
    parser.add_argument("--figures", type=int, default=96, help="independent figures judged together per gated run")
    parser.add_argument("--step", type=float, default=0.75, help="the slowdown: throughput x this")
    parser.add_argument("--tolerance", type=float, default=GateSpec().tolerance)
    parser.add_argument("--pre", type=int, nargs="+", default=[4, 6, 8, 12, 16], help="clean runs before the step")
    parser.add_argument("--post", type=int, nargs="+", default=[1, 2, 3, 4], help="runs after the step")
    parser.add_argument("--lengths", type=int, nargs="+", default=[4, 6, 8, 12, 20], help="clean history lengths")
    parser.add_argument("--clean-runs", type=int, default=24,
                        help="clean gated runs, each judged at every --lengths, per noise model (a)")
    parser.add_argument("--slow-runs", type=int, default=2,
                        help="gated runs with every figure stepped, each judged at every (pre, post) (b)")
    parser.add_argument("--alone-trials", type=int, default=40,
                        help="one stepped figure among clean companions, judged at every (pre, post) (c)")
    parser.add_argument("--companion-sets", type=int, default=4,
                        help="clean runs (of --clean-runs) whose figures are the companions in (c), in turn")
    parser.add_argument("--target", type=float, default=0.8, help="detection rate that counts as enough history")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    pres, posts, lengths = sorted(args.pre), sorted(args.post), sorted(args.lengths)
    figures, sets = args.figures, min(args.companion_sets, args.clean_runs)
    if figures < 2 or args.clean_runs < 1 or (args.alone_trials and sets < 1):
        raise SystemExit("need --figures 2+, --clean-runs 1+ and, for (c), --companion-sets 1+")
    base = HistorySpec()

    models: list[tuple[str, Pool | float]] = []
    jitter = 0.0
    if not args.no_pool:
        machine = None if args.machine == "all" else args.machine
        pool = db_pool(args.db, args.matrix, machine) if args.db else None
        if pool is None:
            pool = baseline_pool(args.baselines, machine or hardware_info().name)
        sd = pool.sd
        q = np.percentile(pool.logs, [5, 50, 95])
        print(f"noise pool: {len(pool.logs)} values of {METRIC} from {pool.groups} cells/series ({pool.source})")
        print(f"  sd of log ratios {sd:.3f} (exp(sd) - 1 = ±{math.expm1(sd):.1%}; unscaled residuals "
              f"{pool.raw_sd:.3f}); 5th / 50th / 95th percentile {np.expm1(q[0]):+.1%} / {np.expm1(q[1]):+.1%} / "
              f"{np.expm1(q[2]):+.1%}; largest |log ratio| {np.abs(pool.logs).max():.3f}")
        jitter = pool.bandwidth if args.jitter is None else args.jitter
        print(f"  drawn as a smoothed bootstrap: each pool value plus normal noise of sd {jitter:.3f}, shrunk by "
              f"1/sqrt(1 + ({jitter:.3f} / {sd:.3f})^2) to keep the sd\n")
        models.append((f"pool (sd {sd:.3f})", pool))
    models += [(f"lognormal sd {s:g}", s) for s in args.noise_sd]
    if not models:
        raise SystemExit("nothing to simulate: --no-pool without --noise-sd")
    names = [name for name, _ in models]

    longest = max(max(lengths), max(pres) + max(posts))
    draws = {}
    for k, (name, model) in enumerate(models):
        rng = np.random.default_rng([args.seed, k])
        sizes = ((args.clean_runs, figures, longest), (args.slow_runs, figures, longest), (args.alone_trials, longest))
        logs = [model.draw(rng, size, jitter) if isinstance(model, Pool) else rng.normal(0.0, model, size=size)
                for size in sizes]
        draws[name] = tuple(LEVEL * np.exp(x) for x in logs)

    runs_se = math.sqrt(0.05 * 0.95 / max(args.clean_runs, 1))
    print(f"{figures} independent figures per gated run; per noise model (the same draws at every max_pvalue; seed "
          f"{args.seed}): (a) {args.clean_runs} clean gated runs, each judged at {len(lengths)} lengths; (b) "
          f"{args.slow_runs} gated runs with every figure stepped, each judged at {len(pres) * len(posts)} (pre, "
          f"post); (c) {args.alone_trials} single stepped figures, each beside the clean figures of one of "
          f"{sets} clean runs in turn. Step x{args.step:g}, tolerance ±{args.tolerance:.0%}, recent {base.recent}, "
          f"persist {base.persist}, flat_runs {base.flat_runs}; machine rule off.")
    errors = [f"(a) {runs_se:.1%} for a 5% share of runs at one length, {runs_se / math.sqrt(len(lengths)):.1%} for a "
              f"5% mean over the {len(lengths)} lengths, {math.sqrt(0.05 * 0.95 / (args.clean_runs * figures)):.2%} "
              "for a 5% per-figure rate"]
    if args.slow_runs:
        errors.append(f"(b) at most {0.5 / math.sqrt(args.slow_runs * figures):.1%} for the share of figures (a "
                      f"chance over {args.slow_runs} runs is only ever a multiple of 1/{args.slow_runs})")
    if args.alone_trials:
        errors.append(f"(c) at most {0.5 / math.sqrt(args.alone_trials):.1%} (more: the companions repeat every "
                      f"{sets} trials)")
    print(f"Standard error of a rate (a binomial's, sqrt(p (1 - p) / trials)): {'; '.join(errors)}.\n")
    posts_said = " / ".join(map(str, posts))
    summary = []
    for p in args.max_pvalue:
        spec = HistorySpec(max_pvalue=p)
        alarms, hits, single = {}, {}, {}
        for name in names:
            otava = Otava()
            t0 = time.perf_counter()
            # the name the history rule calls, replaced for this model's trials only (the module docstring's one
            # liberty): the verdicts are the rule's own, each distinct series costs one Otava call
            with mock.patch.object(trend_module, "change_points", otava):
                alarms[name] = clean(draws[name][0], lengths, args.tolerance, spec)
                if args.alone_trials:
                    single[name] = alone(draws[name][2], draws[name][0][:sets], pres, posts, args.step,
                                         args.tolerance, spec)
                if args.slow_runs:
                    hits[name] = slowdown(draws[name][1], pres, posts, args.step, args.tolerance, spec)
            print(f"max_pvalue {p:g}, {name}: {otava.calls} Otava calls, {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr)

        print(f"### max_pvalue {p:g}\n")
        table("(a) clean history: gated runs with a false verdict (regressed or improved) on any figure (with a "
              "regressed one, which fails the gate); per figure: false verdicts after (before) the "
              "Benjamini-Hochberg demotion", "runs",
              {name: {n: f"{_pct(a['run'])} ({_pct(a['run_regressed'])}); figure {a['figure']:.1%} "
                         f"({a['figure_before']:.1%})" for n, a in alarms[name].items()} for name in names})
        share_by = half_by = alone_by = {}
        if args.slow_runs:
            share_by = {name: {pre: float(np.logical_or.reduce([hits[name][(pre, post)] for post in posts]).mean())
                               for pre in pres} for name in names}
            half = {name: {pre: [hits[name][(pre, post)].sum(axis=1) >= figures / 2 for post in posts]
                           for pre in pres} for name in names}
            half_by = {name: {pre: float(np.logical_or.reduce(half[name][pre]).mean()) for pre in pres}
                       for name in names}
            table(f"(b) every figure steps x{args.step:g}: share of the stepped figures judged regressed at run "
                  f"{posts_said} after the step; by: at any of them", "clean runs before",
                  {name: {pre: " / ".join(_pct(hits[name][(pre, post)].mean()) for post in posts)
                          + f" (by: {_pct(share_by[name][pre])})" for pre in pres} for name in names})
            table(f"(b) every figure steps x{args.step:g}: chance at least half the figures are judged regressed "
                  f"(any figure: the gate fails the run) at run {posts_said} after; by: at least half at any of them",
                  "clean runs before",
                  {name: {pre: " / ".join(f"{_pct(h.mean())} ({_pct(hits[name][(pre, post)].any(axis=1).mean())})"
                                          for h, post in zip(half[name][pre], posts, strict=True))
                          + f" (by: {_pct(half_by[name][pre])})" for pre in pres} for name in names})
        if args.alone_trials:
            alone_by = {name: {pre: float(np.logical_or.reduce([single[name][(pre, post)][0]
                                                                for post in posts]).mean()) for pre in pres}
                        for name in names}
            alone_before = {name: {pre: float(np.logical_or.reduce([single[name][(pre, post)][1]
                                                                    for post in posts]).mean()) for pre in pres}
                            for name in names}
            table(f"(c) one figure steps x{args.step:g} among {figures - 1} clean ones: chance it is judged "
                  f"regressed at run {posts_said} after; by: at any of them (before: on its own series, before "
                  "Benjamini-Hochberg)", "clean runs before",
                  {name: {pre: " / ".join(_pct(single[name][(pre, post)][0].mean()) for post in posts)
                          + f" (by: {_pct(alone_by[name][pre])}; before {_pct(alone_before[name][pre])})"
                          for pre in pres} for name in names})
        for name in names:
            runs_false = [alarms[name][n]["run"] for n in lengths]
            summary.append((p, name, float(np.mean(runs_false)), max(runs_false),
                            float(np.mean([alarms[name][n]["run_regressed"] for n in lengths])),
                            float(np.mean([alarms[name][n]["figure"] for n in lengths])),
                            float(np.mean([alarms[name][n]["figure_before"] for n in lengths])),
                            *(needed(by[name], args.target) if by else "-" for by in (half_by, share_by, alone_by))))
    print(f"### Summary\n\nFalse verdicts: share of clean gated runs with a regressed or improved figure, mean (max) "
          f"over lengths {' '.join(map(str, lengths))}; with a regressed one (fails the gate); per figure after "
          f"(before) Benjamini-Hochberg. Clean runs needed: the fewest clean runs before the step from which on (over "
          f"--pre {' '.join(map(str, pres))}) the step is found by run {posts[-1]} after in {args.target:.0%} of "
          f"trials (all slowed: at least half the figures regressed at one run; per figure: the share of figures "
          f"regressed at least once; one figure alone: (c)).\n")
    print("| max_pvalue | noise | false verdicts per clean gated run | with a regressed figure | per figure | clean "
          "runs needed: all slowed | all slowed, per figure | one figure alone |")
    print("|---:|---|---:|---:|---:|---|---|---|")
    for p, name, mean_false, max_false, regressed, figure, before, slowed, per_figure, single_needed in summary:
        print(f"| {p:g} | {name} | {mean_false:.1%} (max {max_false:.1%}) | {regressed:.1%} | {figure:.2%} "
              f"({before:.2%}) | {slowed} | {per_figure} | {single_needed} |")
    print(f"\n{time.perf_counter() - started:.0f} s", file=sys.stderr)

if __name__ == "__main__":
    main()
