"""The verdict of a paired check, look by look: every gated figure of every cell judged on its per-round
candidate / reference ratios at the per-look level (``harness.metrics.sequential``), a figure keeping the verdict of
the first look that settles it, and whether another round could still settle one that has not.

The rows are the gate's (``GateRow``), so the table, the exit codes and the report read a paired check as they read
the gate: ``baseline`` is the reference, ``now`` the candidate, the launches column counts rounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import median

from harness.config import GateSpec
from harness.metrics import detectable_change, gated_metric, judge, look, look_confidence
from harness.result_records import CellResult
from harness.verdict import GateRow

Round = tuple[dict[str, CellResult], dict[str, CellResult]]
"""One round's results by cell label: the reference's, the candidate's."""
Figure = tuple[str, str]
"""(cell label, gated metric)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """When a paired check looks, how strictly, and when it stops."""

    min_rounds: int
    max_rounds: int
    max_minutes: float
    level: float
    """One-sided level of each look (``per_look_level(min_rounds, max_rounds)``)."""


@dataclass(slots=True)
class Looks:
    """What the looks so far settled: a settled figure's row is final."""

    settled: dict[Figure, GateRow] = field(default_factory=dict)


def _failed(label: str, rounds: Sequence[Round]) -> GateRow | None:
    for number, (ref, cand) in enumerate(rounds, start=1):
        for side, results in (("reference", ref), ("candidate", cand)):
            result = results.get(label)
            if result is None or result.status != "ok" or result.summary is None:
                why = "no result" if result is None else (result.reason or "no summary")
                return GateRow(label, "cell", "", "", None, None, "failed",
                               note=f"the {side} failed in round {number}: {why}")
    return None


def _figure(label: str, name: str, rounds: Sequence[Round], spec: GateSpec, rule: Rule) -> tuple[GateRow, bool] | None:
    gated = gated_metric(name)
    pairs = []
    for ref, cand in rounds:
        a, b = ref[label].summary, cand[label].summary
        assert a is not None and b is not None  # _failed ran first
        x, y = gated.value(a), gated.value(b)
        if x is not None and y is not None:
            pairs.append((x, y))
    if not pairs:
        return None
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    metric, n = gated.metric, len(pairs)
    base = dict(label=label, metric=name, unit=metric.unit, direction=metric.direction, baseline=median(xs),
                current=median(ys), launches=(n, n))
    if metric.judged == "exact" or min(xs + ys) <= 0:
        regressed = max(ys) > max(xs)
        return GateRow(**base, status="regressed" if regressed else "ok",  # type: ignore[arg-type]
                       note="exact: any increase regresses"), False
    assert metric.direction in ("higher", "lower")
    seen = look(xs, ys, metric.direction, spec.tolerance, rule.level, rule.max_rounds)
    if seen.interval is None or n < rule.min_rounds:
        return GateRow(**base, status="inconclusive", note=f"{n} of at least {rule.min_rounds} rounds"), True  # type: ignore[arg-type]
    interval = seen.interval
    status = judge(interval, metric.direction, spec.tolerance)
    detectable = detectable_change(interval, metric.direction, spec.tolerance,
                                   confidence=look_confidence(rule.level))
    note = f"settled after {n} rounds" if status != "inconclusive" else f"inconclusive after {n} rounds"
    return GateRow(**base, status=status, ratio=interval.ratio, low=interval.low,  # type: ignore[arg-type]
                   high=interval.high, noise=interval.noise, note=note, detectable=detectable), seen.could_settle


def look_all(rounds: Sequence[Round], spec: GateSpec, rule: Rule, looks: Looks,
             focus: Iterable[Figure] | None = None) -> tuple[list[GateRow], bool]:
    """Every figure's row at this look (settled ones as first settled) and whether another round could settle an
    unsettled one. ``focus`` limits the check to those figures (what an escalation re-measures)."""
    wanted = set(focus) if focus is not None else None
    reference_labels = list(dict.fromkeys(label for ref, _ in rounds for label in ref))
    candidate_labels = list(dict.fromkeys(label for _, cand in rounds for label in cand))
    rows: list[GateRow] = []
    more = False
    for label in dict.fromkeys(reference_labels + candidate_labels):
        names = [m for m in spec.metrics if wanted is None or (label, m) in wanted]
        if not names:
            continue
        if label not in candidate_labels or label not in reference_labels:
            missing = label not in candidate_labels
            rows.append(GateRow(label, "cell", "", "", None, None, "missing" if missing else "new",
                                note="the candidate has no such cell" if missing else "the reference has no such cell"))
            continue
        failed = _failed(label, rounds)
        if failed is not None:
            rows.append(failed)
            continue
        for name in names:
            if (label, name) in looks.settled:
                rows.append(looks.settled[(label, name)])
                continue
            judged = _figure(label, name, rounds, spec, rule)
            if judged is None:
                continue
            row, could_settle = judged
            if row.status in ("ok", "improved", "regressed") and row.ratio is not None:
                looks.settled[(label, name)] = row
            rows.append(row)
            more = more or (row.status == "inconclusive" and could_settle)
    return rows, more
