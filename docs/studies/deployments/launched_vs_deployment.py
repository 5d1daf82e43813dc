"""The same server configuration launched by the harness and reached as a deployment: per concurrency and figure,
each launch's value on both sides, the ratio of their geometric means and its 90% interval over launches (Welch's t
on the logs), so that "the two paths agree" is read against the launch noise, not a single pair of numbers.

Run from the repository's root on a stored run of ``docs/studies/deployments/launched_vs_deployment.yaml``::

    .venv/bin/python docs/studies/deployments/launched_vs_deployment.py reports/launched-vs-deployment \\
        recall/vllm/bf16/tp1/off by-hand/recall/vllm/bf16/tp1/off
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from scipy import stats

FIGURES = (("tpot_ms", "TPOT ms"), ("itl_ms", "ITL ms"), ("ttft_ms", "TTFT ms"), ("output_throughput", "out tok/s"))


def launches(run: Path) -> dict[str, list[dict[str, object]]]:
    """Each cell label's per-launch summaries, in launch order."""
    found: dict[str, list[dict[str, object]]] = {}
    for cell in sorted((run / "runs").iterdir()):
        for path in sorted(cell.glob("launches/*/summary.json"), key=lambda p: int(p.parent.name)):
            data = json.loads(path.read_text())
            if data["status"] == "ok":
                found.setdefault(str(data["label"]), []).append(data["summary"])
    return found


def value(summary: dict[str, object], key: str) -> float:
    figure = summary[key]
    return float(figure["median"]) if isinstance(figure, dict) else float(str(figure))


def ratio_interval(a: list[float], b: list[float], level: float = 0.90) -> tuple[float, float, float]:
    """b over a: the ratio of geometric means and its interval (Welch's t on the logs)."""
    la, lb = [math.log(x) for x in a], [math.log(x) for x in b]
    ma, mb = sum(la) / len(la), sum(lb) / len(lb)
    va = sum((x - ma) ** 2 for x in la) / (len(la) - 1)
    vb = sum((x - mb) ** 2 for x in lb) / (len(lb) - 1)
    se = math.sqrt(va / len(la) + vb / len(lb))
    df = se ** 4 / ((va / len(la)) ** 2 / (len(la) - 1) + (vb / len(lb)) ** 2 / (len(lb) - 1)) if se else 1.0
    half = float(stats.t.ppf(0.5 + level / 2, df)) * se
    return math.exp(mb - ma), math.exp(mb - ma - half), math.exp(mb - ma + half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="reports/<matrix> of the stored run")
    parser.add_argument("launched", help="the launched server's label (cells: <label>/<workload>/c<n>)")
    parser.add_argument("deployment", help="the deployment's label")
    args = parser.parse_args()
    found = launches(args.run)
    print("| conc. | figure | launched, per launch | deployment, per launch | deployment / launched [90%] | reads |")
    print("|--:|---|---|---|--:|---|")
    for label in sorted(found, key=lambda name: int(name.rsplit("/c", 1)[1])):
        if not label.startswith(args.launched + "/"):
            continue
        rest = label[len(args.launched):]
        twin = found.get(args.deployment + rest)
        if twin is None:
            continue
        for key, name in FIGURES:
            a = [value(s, key) for s in found[label]]
            b = [value(s, key) for s in twin]
            mid, low, high = ratio_interval(a, b)
            reads = "agree within the launch noise" if low <= 1.0 <= high else "differ beyond the launch noise"
            print(f"| {rest.rsplit('/c', 1)[1]} | {name} | {', '.join(f'{x:.3g}' for x in a)} | "
                  f"{', '.join(f'{x:.3g}' for x in b)} | {mid:.3f} [{low:.3f}, {high:.3f}] | {reads} |")


if __name__ == "__main__":
    main()
