"""Would the gate conclude more often if each figure's launch noise were pooled over the cells?

Usage: ``.venv/bin/python docs/studies/reproducibility/pooled_noise.py [lock/default.baseline.json]
[--tolerance 0.1]``.

The gate judges a figure of one cell on that cell's own launches: a baseline of three or four launches and a run of
one leave it two or three degrees of freedom, so Student's t is large (2.9 at two). Pooling the noise of one figure
over every cell of the baseline gives it dozens of degrees of freedom; shrinking each cell's noise towards the
pooled one (an empirical-Bayes "moderated" variance with ``PRIOR_DF`` prior degrees of freedom) sits between the
two. This replays every launch of every entry of the committed baseline against the other launches of its cell
(leave one out: the same machine, no drift between runs, so optimistic for all three rules) and prints, per timing
figure, the share the ±tolerance check would call ``ok`` under each rule.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

TIMING = ("output_throughput", "interactivity", "ttft_ms.median", "tpot_ms.median", "itl_ms.median")
PRIOR_DF = 8
RULES = ("own", "pooled", "moderated")


def _logs(cells: dict[str, Any], metric: str) -> list[np.ndarray]:
    found = []
    for cell in cells.values():
        values = cell["values"].get(metric) or []
        if len(values) >= 3 and all(v is not None and v > 0 for v in values):
            found.append(np.log(np.asarray(values, dtype=float)))
    return found


def _conclusive(diff: float, sd: float, df: float, factor: float, tolerance: float) -> bool:
    half = float(stats.t.ppf(0.95, df)) * sd * factor
    return math.exp(diff - half) >= 1 - tolerance and math.exp(diff + half) <= 1 + tolerance


def shares(rows: list[np.ndarray], tolerance: float) -> dict[str, float]:
    """The share of leave-one-out checks each rule calls conclusive, for one figure's cells."""
    hits = dict.fromkeys(RULES, 0)
    total = 0
    for row in rows:
        for k in range(row.size):
            base = np.delete(row, k)
            diff = float(row[k] - base.mean())
            factor = math.sqrt(1 / base.size + 1)
            own_ss, own_df = float(((base - base.mean()) ** 2).sum()), base.size - 1
            others = [np.delete(r, k) if r.size == row.size else r for r in rows]
            pooled_ss = sum(float(((o - o.mean()) ** 2).sum()) for o in others)
            pooled_df = sum(o.size - 1 for o in others)
            pooled = pooled_ss / pooled_df
            hits["own"] += _conclusive(diff, math.sqrt(own_ss / own_df), own_df, factor, tolerance)
            hits["pooled"] += _conclusive(diff, math.sqrt(pooled), pooled_df, factor, tolerance)
            moderated = (PRIOR_DF * pooled + own_ss) / (PRIOR_DF + own_df)
            hits["moderated"] += _conclusive(diff, math.sqrt(moderated), PRIOR_DF + own_df, factor, tolerance)
            total += 1
    return {rule: hits[rule] / total if total else math.nan for rule in RULES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("baseline", nargs="?", type=Path, default=Path("lock/default.baseline.json"))
    parser.add_argument("--tolerance", type=float, default=0.10)
    args = parser.parse_args()
    baseline = json.loads(args.baseline.read_text())
    print(f"| machine | figure | {' | '.join(RULES)} |\n|---|---|{'--:|' * len(RULES)}")
    for entry in baseline["machines"]:
        hardware = entry["hardware"]
        for metric in TIMING:
            found = shares(_logs(entry["cells"], metric), args.tolerance)
            print(f"| {hardware['name']} {hardware.get('isa') or ''} | {metric} | "
                  + " | ".join(f"{found[rule]:.0%}" for rule in RULES) + " |")


if __name__ == "__main__":
    main()
