"""The history's verdict on the newest run of one figure: whether its series steps at the newest runs, and by how
much, or has been flat for long enough to say so.

Rules, in order (``docs/history.md`` says when each applies):

* ``absent``: the run judged is not the newest point of the series (it was not recorded): nothing said.
* ``short``: fewer than three runs: no change point can be found.
* a change point among the newest ``recent`` runs that has held for ``persist`` runs (the run judged included):
  ``regressed`` or ``improved`` when the step is beyond the tolerance in the figure's bad or good direction, else
  ``step`` (a change within the tolerance). A step the machine-speed probes share (a change point in the run's
  probe seconds within one run of it, the machine slower where the figure got worse) is ``step`` too: the machine,
  not the recipe, may explain it.
* The run's figures are judged together (``judge_trends``): a gate reads a hundred series at once, and a step's
  significance holds per series, so the steps that regress or improve must also pass Benjamini-Hochberg at
  ``max_pvalue`` over every series judged; those that do not are ``step``. A slowdown that moves many figures at
  once (a slower engine) is found nearly as easily as figure by figure; a lone figure needs a clearer step.
  ``docs/studies/history.md`` measures the false verdicts this leaves per clean gated run, and the runs a 25%
  slowdown needs, over the launch noise measured here.
* ``flat``: no change point in the newest ``flat_runs`` runs: the figure has held.
* ``quiet``: no change point at the newest runs, but too few runs since the last one to call it flat.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from harness.config.gates import HistorySpec
from harness.history.changes import Change, change_points
from harness.history.series import Series

TrendVerdict = Literal["regressed", "improved", "step", "flat", "quiet", "short", "absent"]


@dataclass(frozen=True, slots=True)
class Trend:
    """One figure's series, the change points in it and in the run's machine speed, and the verdict on the newest
    run, with a sentence saying why."""

    series: Series
    changes: tuple[Change, ...]
    machine_changes: tuple[Change, ...]
    verdict: TrendVerdict
    note: str
    step: Change | None = None
    """The change point the verdict rests on (regressed, improved, step)."""

    @property
    def changed(self) -> bool:
        return self.verdict in ("regressed", "improved", "step")


def _spread(values: list[float]) -> float:
    """Run-to-run spread as exp(sd of logs) - 1."""
    logs = [math.log(v) for v in values if v > 0]
    if len(logs) < 2:
        return 0.0
    mean = sum(logs) / len(logs)
    return math.exp(math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))) - 1


def _machine_explains(step: Change, machine: tuple[Change, ...], direction: str) -> Change | None:
    """A probe change point within one run of the step, with the machine slower (more probe seconds) where the
    figure got worse, or faster where it got better."""
    worse = step.ratio < 1 if direction == "higher" else step.ratio > 1
    for change in machine:
        slower = change.ratio > 1
        if abs(change.index - step.index) <= 1 and slower == worse:
            return change
    return None


def machine_changes(series: Series, spec: HistorySpec) -> tuple[Change, ...]:
    """Change points in the machine-speed probe of the series' runs (none unless every run was probed)."""
    probes = [p.run.machine_s for p in series.points]
    if any(s is None for s in probes):
        return ()
    return tuple(change_points([s for s in probes if s is not None], max_pvalue=spec.max_pvalue))


def judge_trend(series: Series, direction: str, tolerance: float, spec: HistorySpec,
                run_key: str | None, machine: tuple[Change, ...] | None = None) -> Trend:
    """The history's verdict on the run ``run_key`` for this figure (``direction``: higher or lower is better).
    ``machine``: the probe's change points over the same runs, when the caller has them (else found here)."""
    values = series.values
    n = len(values)
    if run_key is None or not series.points or series.points[-1].run.run_key != run_key:
        return Trend(series, (), (), "absent", "history: this run is not the newest in the history")
    if n < 3:
        return Trend(series, (), (), "short", f"history: {n} run(s), too few for a change point")
    changes = tuple(change_points(values, max_pvalue=spec.max_pvalue))
    if machine is None:
        machine = machine_changes(series, spec)
    recent = [c for c in changes if n - spec.recent <= c.index <= n - spec.persist]
    if recent:
        step = recent[-1]
        where = f"at run {step.index + 1} of {n}" if step.index < n - 1 else f"at this run ({n} of {n})"
        said = f"history: a step of {step.change_pct:+.1f}% {where} (Otava, p = {step.pvalue:.2g})"
        if (explains := _machine_explains(step, machine, direction)) is not None:
            return Trend(series, changes, machine, "step", f"{said}, but the machine-speed probe stepped "
                         f"{explains.change_pct:+.1f}% (in seconds) there too: not attributable", step)
        worse = step.ratio < 1 - tolerance if direction == "higher" else step.ratio > 1 + tolerance
        better = step.ratio > 1 + tolerance if direction == "higher" else step.ratio < 1 - tolerance
        verdict: TrendVerdict = "regressed" if worse else "improved" if better else "step"
        tail = "" if verdict != "step" else f", within the ±{tolerance:.0%} tolerance"
        return Trend(series, changes, machine, verdict, said + tail, step)
    since = n - (changes[-1].index if changes else 0)
    spread = _spread(values[n - since:])
    if since >= spec.flat_runs:
        return Trend(series, changes, machine, "flat", f"history: flat over the last {since} runs (no change point; "
                     f"run-to-run spread ±{spread:.0%})")
    return Trend(series, changes, machine, "quiet", f"history: no change point at the newest runs ({since} run(s) "
                 f"since the last, {spec.flat_runs} make it flat)")


def judge_trends(series: Sequence[Series], directions: Mapping[str, str], tolerance: float, spec: HistorySpec,
                 run_key: str | None) -> tuple[Trend, ...]:
    """Judge every series of one run (``directions``: metric -> higher / lower), the steps that would regress or
    improve it held together to a false discovery rate of ``spec.max_pvalue`` (Benjamini-Hochberg)."""
    probed: dict[tuple[str, ...], tuple[Change, ...]] = {}  # series over the same runs share one probe series
    trends = []
    for s in series:
        runs = tuple(p.run.run_key for p in s.points)
        if runs not in probed:
            probed[runs] = machine_changes(s, spec)
        trends.append(judge_trend(s, directions[s.metric], tolerance, spec, run_key, probed[runs]))
    judged = sum(t.verdict not in ("absent", "short") for t in trends)
    decided = sorted((t.step.pvalue, i) for i, t in enumerate(trends)
                     if t.step is not None and t.verdict in ("regressed", "improved"))
    passing = [rank for rank, (p, _) in enumerate(decided, 1) if p <= rank / max(judged, 1) * spec.max_pvalue]
    kept = {i for _, i in decided[:max(passing, default=0)]}
    return tuple(t if i in kept or t.verdict not in ("regressed", "improved") else
                 replace(t, verdict="step", note=f"{t.note}; not significant once the run's {judged} judged "
                                                 f"figures are counted (Benjamini-Hochberg at {spec.max_pvalue:g})")
                 for i, t in enumerate(trends))
