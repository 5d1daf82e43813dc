"""The report's reproduction section: this run's gated figures over those of an earlier run of the same matrix on
the same machine kind, read from the results history (``harness.history``), as the capstone asks ("another engineer
can run make bench and reproduce your numbers within ±10%").

Per cell and gated figure it gives this run over the earlier one as a ratio of geometric means over each run's
launches, with its interval where the launches allow one; how many figures land within ±10%; and whether the code,
the engines or the machine's probe changed between the two runs, as the history recorded them. This is run-to-run
spread on one machine kind across hours, not a verdict: the regression gate (``harness.verdict``) judges against the
committed baseline, and nothing here feeds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from harness.errors import HistoryError
from harness.history import DISABLED, Point, RunInfo, opened, read_series, runs_of, shown
from harness.metrics.gateable import gated_metric
from harness.metrics.intervals import GATE_CONFIDENCE, RatioInterval, ratio_interval
from harness.plan.cells import Plan
from harness.store import Store
from harness.verdict.lock import Lock

WITHIN = 0.10
"""The capstone's pass criterion: a figure reproduces when this run over the earlier one is within ±10%."""
SHOWN_COMMIT = 12
"""Hex digits of a commit the section shows."""


def _inside(ratio: float) -> bool:
    return 1 - WITHIN <= ratio <= 1 + WITHIN


@dataclass(frozen=True, slots=True)
class ReproducedFigure:
    """One gated figure of one cell, measured in both runs: each run's figure and this run's over the earlier's."""

    label: str
    metric: str
    earlier: float
    """The earlier run's geometric mean over its launches (an exact figure: its worst launch)."""
    now: float
    launches: tuple[int, int]
    """Launches of the earlier run and of this one."""
    ratio: float | None
    """This run's figure over the earlier's; None for an exact figure (errors) or one that is not positive."""
    interval: RatioInterval | None
    """The ratio's ``GATE_CONFIDENCE`` interval; None with one launch on each side (no noise to go on)."""
    note: str = ""
    """Why there is no ratio, or no interval."""

    @property
    def within(self) -> bool:
        return self.ratio is not None and _inside(self.ratio)

    @property
    def settled(self) -> bool:
        """The whole interval within ±10%, not only the ratio."""
        return self.interval is not None and _inside(self.interval.low) and _inside(self.interval.high)

    @property
    def ratio_text(self) -> str:
        """``1.02x [0.97, 1.07]``, or the ratio alone (``standing`` says why it has no interval)."""
        if self.ratio is None:
            return "–"
        return self.interval.text() if self.interval else f"{self.ratio:.2f}x"

    @property
    def standing(self) -> str:
        """Whether the figure reproduces: ``yes``, ``no``, and how far its interval agrees; or why it has no ratio."""
        if self.ratio is None:
            return self.note
        if self.interval is None:
            return f"{'yes' if self.within else 'no'} ({self.note})"
        if not self.within:
            return "no"
        return "yes, the whole interval inside" if self.settled else f"yes, but the interval reaches past ±{WITHIN:.0%}"


def _figure(label: str, metric: str, then: Point, now: Point) -> ReproducedFigure:
    counts = (len(then.values), len(now.values))
    gated = gated_metric(metric).metric
    if gated.judged == "exact":
        worst = max if gated.direction == "lower" else min
        return ReproducedFigure(label, metric, worst(then.values), worst(now.values), counts, None, None,
                                "exact figure: each run's worst launch, not a ratio")
    if min(*then.values, *now.values) <= 0:
        return ReproducedFigure(label, metric, then.center, now.center, counts, None, None, "not positive: no ratio")
    interval = ratio_interval(then.values, now.values, GATE_CONFIDENCE)
    # ratio_interval declines only one launch on each side here (the values are positive): the ratio stands alone
    ratio = interval.ratio if interval else now.center / then.center
    return ReproducedFigure(label, metric, then.center, now.center, counts, ratio, interval,
                            "" if interval else "one launch each: no interval")


def code_change(then: str | None, now: str | None, dirty: bool | None) -> str:
    """The harness commits of the two runs, and this run's uncommitted changes (the history keeps no such flag)."""
    if then and now:
        commits = (f"same harness commit `{now[:SHOWN_COMMIT]}`" if then == now else
                   f"harness commit changed, `{then[:SHOWN_COMMIT]}` then, `{now[:SHOWN_COMMIT]}` now")
    else:
        which = "either run" if not (then or now) else "the earlier run" if not then else "this run"
        known = then or now
        commits = f"harness commit not recorded for {which}" + (f" (the other: `{known[:SHOWN_COMMIT]}`)"
                                                                 if known else "")
    state = {True: "this run had some", False: "this run had none", None: "not recorded for this run"}[dirty]
    return f"Code: {commits}; uncommitted changes: {state}, not recorded for the earlier run."


def engines_change(then: Mapping[str, str], now: Mapping[str, str]) -> str:
    """Each runtime's engine package and version in the two runs."""
    if not then or not now:
        which = "either run" if not (then or now) else "the earlier run" if not then else "this run"
        known = ", ".join((then or now).values())
        return f"Engines: not recorded for {which}" + (f" (the other: {known})" if known else "") + "."
    parts = []
    for name in dict.fromkeys([*now, *then]):
        before, after = then.get(name), now.get(name)
        if before == after:
            parts.append(f"{after} in both")
        elif before is None or after is None:
            parts.append(f"{before or after} in {'this run' if before is None else 'the earlier run'} only")
        else:
            parts.append(f"{name} changed, {before} then, {after} now")
    return "Engines: " + "; ".join(parts) + "."


def probe_change(then: float | None, now: float | None) -> str:
    """The machine-speed probe's seconds in the two runs (each run's median), and what their ratio says."""
    if then is None or now is None:
        which = "either run" if then is None and now is None else "the earlier run" if then is None else "this run"
        return f"Machine probe: not recorded for {which}."
    ratio = now / then
    # the probe's seconds grow as the machine slows: more seconds now is a slower machine
    speed = ("at the same speed (1.00x)" if f"{ratio:.2f}" == "1.00" else f"{ratio:.2f}x slower than the earlier run"
             if ratio > 1 else f"{1 / ratio:.2f}x faster than the earlier run")
    return f"Machine probe: {then:.3f} s then, {now:.3f} s now (each run's median): this machine ran {speed}."


def hours_apart(earlier: str, now: str) -> float | None:
    """Hours from the earlier run's start to this one's; None when a time does not parse (or one has no zone)."""
    try:
        return (datetime.fromisoformat(now) - datetime.fromisoformat(earlier)).total_seconds() / 3600
    except (ValueError, TypeError):
        return None


@dataclass(frozen=True, slots=True)
class Reproduction:
    """This run beside the newest earlier run of its matrix on this machine kind, or why there is none."""

    absent: str | None
    """The one sentence saying why nothing is compared; None when something is."""
    earlier: RunInfo | None = None
    now: RunInfo | None = None
    hours: float | None = None
    """Hours between the two runs' starts."""
    runs: int = 0
    """Runs of the matrix on this machine kind in the history, this one included."""
    figures: tuple[ReproducedFigure, ...] = ()
    """Every gated figure of every cell measured in both runs, in plan order."""
    changes: tuple[str, ...] = ()
    """Whether the code, the engines and the machine's probe changed, one statement each."""
    within_pct: float = WITHIN * 100
    confidence_pct: float = GATE_CONFIDENCE * 100

    @property
    def apart(self) -> str | None:
        """How long before this run the earlier one started: ``6.0 hours``, ``3.2 days``."""
        if self.hours is None:
            return None
        return f"{self.hours:.1f} hours" if self.hours < 48 else f"{self.hours / 24:.1f} days"

    @property
    def ratios(self) -> tuple[ReproducedFigure, ...]:
        """The figures with a ratio: those the ±10% count is over."""
        return tuple(f for f in self.figures if f.ratio is not None)

    @property
    def bounds(self) -> tuple[float, float]:
        """The range a ratio reproduces in: [0.9, 1.1]."""
        return 1 - self.within_pct / 100, 1 + self.within_pct / 100

    @property
    def unratioed(self) -> int:
        """Figures shown without a ratio (exact counts, figures that are not positive): not counted."""
        return len(self.figures) - len(self.ratios)

    @property
    def reproduced(self) -> int:
        return sum(f.within for f in self.figures)

    @property
    def settled(self) -> int:
        return sum(f.settled for f in self.figures)

    @property
    def with_interval(self) -> int:
        return sum(f.interval is not None for f in self.figures)

    @property
    def headline(self) -> str:
        """``14 of 18 figures within ±10% (9 of them with their whole 90% interval inside)``."""
        if self.absent is not None:
            return "not measured"
        text = f"{self.reproduced} of {len(self.ratios)} figures within ±{self.within_pct:.0f}%"
        if not self.with_interval:
            return text + " (one launch each: no interval)"
        return text + f" ({self.settled} of them with their whole {self.confidence_pct:.0f}% interval inside)"


def reproduction(plan: Plan, store: Store, lock: Lock, matrix_path: str) -> Reproduction:
    """This run's gated figures over those of the newest earlier run of the matrix, on this machine kind, that
    measured a cell of this plan; every figure and statement as the history recorded it."""
    url, matrix, machine = store.history_url, plan.matrix.name, lock.hardware.fingerprint
    again = (f"run the same matrix again (`harness run {matrix_path}`, or `make bench` a second time) and the next "
             "report sets this run beside that one")
    if url == DISABLED:
        return Reproduction(f"The results history is off for this run (--history none), so there is no earlier run "
                            f"to reproduce: keep it on and {again}.")
    order = {cell.cell_id: i for i, cell in enumerate(plan.cells)}
    metrics = list(plan.matrix.gates.metrics)
    try:
        with opened(url) as engine:
            runs = runs_of(engine, matrix, machine)
            series = read_series(engine, matrix, machine, metrics, list(order))
    except HistoryError as exc:
        return Reproduction(f"The results history could not be read ({str(exc).splitlines()[0]}), so this run is "
                            "not compared with an earlier one.")
    stamp = store.read_run_stamp()
    keys = [run.run_key for run in runs]
    if stamp is None or stamp.run_id not in keys:
        return Reproduction(f"This run is not in the results history ({shown(url)}), so it is not compared with an "
                            f"earlier one: `harness history {matrix_path} --record` records it.")
    now = runs[keys.index(stamp.run_id)]
    points = {(s.cell_id, s.metric): {p.run.run_key: p for p in s.points} for s in series}
    labels = {s.cell_id: s.label for s in series}
    earlier = next((run for run in reversed(runs[:keys.index(now.run_key)])
                    if any({run.run_key, now.run_key} <= set(by_run) for by_run in points.values())), None)
    if earlier is None:
        return Reproduction(f"No earlier run of {matrix} on this machine kind ({machine}) with a cell this run "
                            f"measured is in the results history, so reproduction is not measured yet: {again}.",
                            runs=len(runs))
    shared = [(key, by_run) for key, by_run in points.items() if {earlier.run_key, now.run_key} <= set(by_run)]
    shared.sort(key=lambda item: (order[item[0][0]], metrics.index(item[0][1])))
    figures = tuple(_figure(labels[cell_id], metric, by_run[earlier.run_key], by_run[now.run_key])
                    for (cell_id, metric), by_run in shared)
    changes = (code_change(earlier.commit, now.commit, lock.harness.dirty),
               engines_change(earlier.engines, now.engines), probe_change(earlier.machine_s, now.machine_s))
    return Reproduction(None, earlier, now, hours_apart(earlier.started_at, now.started_at), len(runs), figures,
                        changes)
