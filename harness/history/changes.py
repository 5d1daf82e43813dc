"""Change points in a series of runs, found by Apache Otava (the E-divisive means method with a Student's t
significance test, from MongoDB's and DataStax's performance CI: Fleming et al., "Hunter", ICPE 2023), each step
then re-tested here with the sample standard deviations (``_retest``).

Figures are compared on a log scale, so a step is a ratio (0.75: the figure fell to 75%) and a noisy fast cell and
a noisy slow one are judged alike. Otava is imported here only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MAX_PVALUE = 0.005
"""Significance a change point needs (Otava's default is 0.001, tuned for series of hundreds of runs; a history of
ten runs on a noisy 2-core machine needs a looser bound to see anything; the gate then holds a run's figures
together to this false discovery rate: ``docs/studies/history.md`` has the rate of false verdicts on clean history
and the runs a 25% slowdown needs, simulated over the launch noise measured here)."""
WINDOW = 30
"""Otava's sliding window, in runs."""


@dataclass(frozen=True, slots=True)
class Change:
    """A step in a series: the first run after it, the ratio of the runs after to the runs before (geometric means
    of the segments either side, up to the neighbouring change points), and the step's significance."""

    index: int
    ratio: float
    pvalue: float
    before: float
    after: float

    @property
    def change_pct(self) -> float:
        return (self.ratio - 1.0) * 100.0


def change_points(values: Sequence[float], *, max_pvalue: float = MAX_PVALUE,
                  min_magnitude: float = 0.0) -> list[Change]:
    """Otava's change points in ``values`` (positive figures, oldest first); fewer than three values have none.
    ``min_magnitude``: a step smaller than this relative change is dropped (0 keeps every significant one)."""
    if len(values) < 3 or min(values) <= 0:
        return []
    from otava.analysis import compute_change_points  # imported here: the one place Otava is used

    logs = [math.log(v) for v in values]
    # Otava's own magnitude filter divides the segment means, which means nothing on a log scale: filter here
    found, _ = compute_change_points(logs, window_len=WINDOW, max_pvalue=max_pvalue, min_magnitude=0.0)
    bounds = [0, *(int(c.index) for c in found), len(logs)]
    changes = []
    for k, c in enumerate(found):
        before, after = logs[bounds[k]:bounds[k + 1]], logs[bounds[k + 1]:bounds[k + 2]]
        pvalue = _retest(before, after)
        if pvalue < max_pvalue:
            mean_before, mean_after = sum(before) / len(before), sum(after) / len(after)
            changes.append(Change(index=int(c.index), ratio=math.exp(mean_after - mean_before), pvalue=pvalue,
                                  before=math.exp(mean_before), after=math.exp(mean_after)))
    return [c for c in changes if abs(math.log(c.ratio)) >= math.log1p(min_magnitude)]


def _retest(before: list[float], after: list[float]) -> float:
    """The step's p-value again, by Student's two-sample t-test with the sample standard deviations (pooled: the
    noise is the machine's, the same either side). Otava 0.8's own test hands scipy population standard deviations
    (ddof 0), which makes the 2-4-run segments a new step has look steadier than they are and its p-values too
    small (``docs/studies/history.md``); Otava still finds where the steps are."""
    from scipy.stats import t as student

    n1, n2 = len(before), len(after)
    if n1 + n2 < 3:
        return 1.0
    m1, m2 = sum(before) / n1, sum(after) / n2
    squares = sum((x - m1) ** 2 for x in before) + sum((x - m2) ** 2 for x in after)
    pooled = squares / (n1 + n2 - 2)
    if pooled <= 1e-24:  # exact levels either side (acceptance under greedy decoding): a step without noise, or none
        return 0.0 if abs(m2 - m1) > 1e-12 else 1.0
    statistic = abs(m2 - m1) / math.sqrt(pooled * (1 / n1 + 1 / n2))
    return float(2 * student.sf(statistic, n1 + n2 - 2))
