"""How many launches a side the default's regression gate would need for its timing checks to come out conclusive.

Usage: ``.venv/bin/python benchmarks/launches_needed.py [lock/default.baseline.json] [--tolerance 0.1]``.

For every timing-judged gated figure of the baseline (``output_throughput``, ``interactivity``, the TTFT / TPOT /
ITL medians), the launch-to-launch noise is the standard deviation of the logarithms of its launches (what
``harness.metrics.intervals.ratio_interval`` pools). If a run measured the same machine with n launches against a
baseline of n launches and the true ratio were exactly 1, its one-sided 95% bound would lie ``t(0.95, 2n - 2) * sd
* sqrt(2 / n)`` from 1 in log terms, and the check is conclusive (``ok``) when that is inside the tolerance. The
script prints, per n, the share of checks that clears it. It is an optimistic bound: a real run also carries the
drift between runs, which only widens what is printed here (README, issue 14).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from scipy import stats

from harness.config.matrix import GATED_METRICS
from harness.metrics.summary import METRICS

LAUNCHES = (2, 3, 4, 5, 6, 8, 10, 15, 20)


def timing_noise(baseline: dict[str, object]) -> list[float]:
    """The log-scale launch-to-launch sd of every timing-judged gated (cell, metric) with 2+ positive values."""
    judged = {m.name: m.judged for m in METRICS}
    out = []
    cells = baseline["cells"]
    assert isinstance(cells, dict)
    for cell in cells.values():
        for name in GATED_METRICS:
            # a latency figure is its metric plus .median/.p90/.p99; speculation.* names are whole metric names
            if judged.get(name, judged.get(name.rpartition(".")[0])) != "timing":
                continue
            values = [v for v in cell["values"].get(name, []) if v is not None and v > 0]
            if len(values) >= 2:
                out.append(float(np.std(np.log(values), ddof=1)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline", type=Path, nargs="?", default=Path("lock/default.baseline.json"))
    parser.add_argument("--tolerance", type=float, default=0.10)
    args = parser.parse_args()
    noise = timing_noise(json.loads(args.baseline.read_text()))
    limit = math.log1p(args.tolerance)
    print(f"{len(noise)} timing checks; launch noise (exp(sd) - 1): median {math.expm1(float(np.median(noise))):.1%}, "
          f"p90 {math.expm1(float(np.percentile(noise, 90))):.1%}")
    for n in LAUNCHES:
        reach = float(stats.t.ppf(0.95, 2 * n - 2)) * math.sqrt(2 / n)
        share = sum(sd * reach < limit for sd in noise) / len(noise)
        print(f"{n:>3} launches a side: {share:.0%} of the timing checks conclusive at +-{args.tolerance:.0%}")


if __name__ == "__main__":
    main()
