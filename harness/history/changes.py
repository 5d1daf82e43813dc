"""Change points in a series of runs, found by Apache Otava (the E-divisive means method with a Student's t
significance test, from MongoDB's and DataStax's performance CI: Fleming et al., "Hunter", ICPE 2023).

Figures are compared on a log scale, so a step is a ratio (0.75: the figure fell to 75%) and a noisy fast cell and
a noisy slow one are judged alike. Otava is imported here only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MAX_PVALUE = 0.01
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
    changes = [Change(index=int(c.index), ratio=math.exp(c.stats.mean_2 - c.stats.mean_1),
                      pvalue=float(c.stats.pvalue), before=math.exp(c.stats.mean_1), after=math.exp(c.stats.mean_2))
               for c in found]
    return [c for c in changes if abs(math.log(c.ratio)) >= math.log1p(min_magnitude)]
