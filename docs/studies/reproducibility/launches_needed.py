"""How many launches a side the default's regression gate would need for its timing checks to come out conclusive.

Usage: ``.venv/bin/python docs/studies/reproducibility/launches_needed.py [lock/default.baseline.json]
[--tolerance 0.1] [--machine NAME]``: the baseline's entry for this machine by default (a baseline is kept per
machine), another machine's by its hardware name, or every entry's cells together with ``--machine all``.

For every timing-judged gated figure of the baseline (``output_throughput``, ``interactivity``, the TTFT / TPOT /
ITL medians), the launch-to-launch noise is the standard deviation of the logarithms of its launches (what
``harness.metrics.intervals.ratio_interval`` pools). If a run measured the same machine with n launches against a
baseline of n launches and the true ratio were exactly 1, its one-sided 95% bound would lie ``t(0.95, 2n - 2) * sd
* sqrt(2 / n)`` from 1 in log terms, and the check is conclusive (``ok``) when that is inside the tolerance. The
script prints, per n, the share of checks that clears it. It is an optimistic bound: a real run also carries the
drift between runs, which only widens what is printed here (two fresh-clone runs of the default put 8 of 25 cells'
output tok/s within ±10% of each other: docs/studies/reproducibility.md).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from harness.config.gates import GATED_METRICS
from harness.host import hardware_info
from harness.metrics.cell_summary import METRICS

LAUNCHES = (2, 3, 4, 5, 6, 8, 10, 15, 20)


def machine_cells(baseline: dict[str, Any], machine: str | None) -> list[dict[str, Any]]:
    """The cells of the baseline's entry whose hardware is named ``machine`` (None: every entry's)."""
    entries = [e for e in baseline["machines"] if machine is None or e["hardware"]["name"] == machine]
    if not entries:
        names = ", ".join(repr(e["hardware"]["name"]) for e in baseline["machines"])
        raise SystemExit(f"the baseline has no entry for machine {machine!r}; it has {names} (or pass --machine all)")
    return [cell for entry in entries for cell in entry["cells"].values()]


def timing_noise(cells: list[dict[str, Any]]) -> list[float]:
    """The log-scale launch-to-launch sd of every timing-judged gated (cell, metric) with 2+ positive values."""
    judged = {m.name: m.judged for m in METRICS}
    out = []
    for cell in cells:
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
    parser.add_argument("--machine", help="the baseline entry's hardware name (default: this machine's), or all")
    args = parser.parse_args()
    machine = None if args.machine == "all" else args.machine or hardware_info().name
    noise = timing_noise(machine_cells(json.loads(args.baseline.read_text()), machine))
    print(f"machine: {machine or 'all'}")
    limit = math.log1p(args.tolerance)
    print(f"{len(noise)} timing checks; launch noise (exp(sd) - 1): median {math.expm1(float(np.median(noise))):.1%}, "
          f"p90 {math.expm1(float(np.percentile(noise, 90))):.1%}")
    for n in LAUNCHES:
        reach = float(stats.t.ppf(0.95, 2 * n - 2)) * math.sqrt(2 / n)
        share = sum(sd * reach < limit for sd in noise) / len(noise)
        print(f"{n:>3} launches a side: {share:.0%} of the timing checks conclusive at +-{args.tolerance:.0%}")


if __name__ == "__main__":
    main()
