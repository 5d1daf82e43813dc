"""Summarize paired checks (``paired.json`` files written by ``harness regress --against``) for the study page.

    python docs/studies/paired-regression/summarize.py reports/regress/paired/*/paired.json ...

Per check: rounds, why it stopped, the share of gated figures that settled, how many read regressed, the minutes;
then, over all checks, each timing figure's per-launch noise (median and range) as the paired rows carry it.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def main(paths: list[str]) -> None:
    noise: dict[str, list[float]] = defaultdict(list)
    print("| check | rounds | stopped | settled | regressed | minutes | per-look level |")
    print("|---|--:|---|--:|--:|--:|--:|")
    for name in paths:
        check = json.loads(Path(name).read_text())
        rows = [r for r in check["result"]["rows"] if r["status"] in ("ok", "improved", "regressed", "inconclusive")]
        settled = sum(r["status"] != "inconclusive" for r in rows)
        regressed = sum(r["status"] == "regressed" for r in rows)
        minutes = sum(check["round_seconds"]) / 60
        print(f"| {Path(name).parent.parent.parent.parent.name} | {len(check['orders'])} | {check['stopped']} | "
              f"{settled} of {len(rows)} ({settled / len(rows):.0%}) | {regressed} | {minutes:.1f} | "
              f"{check['level']:.2%} |")
        for r in rows:
            if r["noise"]:
                noise[f"{r['label'].rsplit('/', 1)[-1]} {r['metric']}"].append(r["noise"])
    print("\n| figure | per-launch noise, median | range | checks |")
    print("|---|--:|--:|--:|")
    for figure, values in sorted(noise.items()):
        print(f"| {figure} | {statistics.median(values):.1%} | {min(values):.1%} to {max(values):.1%} | "
              f"{len(values)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
