"""How far two runs of one matrix disagree: per gated (cell, metric) pair, the ratio of run B to run A.

Asked of two fresh-clone `make bench` runs (docs/studies/reproducibility.md): how many of the figures the gate
judges land within ±10% of each other, per metric, with the median and the range of the ratios. Cells pair by
label; a cell measured in only one run is counted as missing. Usage:

    .venv/bin/python docs/studies/reproducibility/run_spread.py RUN_A/reports/default RUN_B/reports/default [--matrix M]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from harness.config.matrix import load_matrix
from harness.metrics.cell_summary import CellSummary
from harness.metrics.gateable import gated_metric
from harness.plan.expand import expand
from harness.store import Store


def figures(reports: Path, matrix: Path) -> dict[str, CellSummary]:
    plan = expand(load_matrix(matrix))
    store = Store(reports.parent, reports.name)
    found = {}
    for cell in plan.cells:
        result = store.read_result(cell)
        if result is not None and result.summary is not None:
            found[cell.label] = result.summary
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--matrix", type=Path, default=Path("matrices/default.yaml"))
    parser.add_argument("--tolerance", type=float, default=0.10)
    args = parser.parse_args()
    plan = load_matrix(args.matrix)
    a, b = figures(args.a, args.matrix), figures(args.b, args.matrix)
    print(f"{len(a)} cells in A, {len(b)} in B, {len(set(a) & set(b))} in both; tolerance ±{args.tolerance:.0%}")
    print("| metric | pairs | within ±tolerance | median B/A | range B/A |\n|---|--:|--:|--:|--:|")
    total = inside = 0
    for name in plan.gates.metrics:
        metric = gated_metric(name)
        ratios = []
        for label in sorted(set(a) & set(b)):
            va, vb = metric.value(a[label]), metric.value(b[label])
            if va is None or vb is None:
                continue
            if va == vb:  # identical, zero error rates included
                ratios.append(1.0)
            elif va > 0:
                ratios.append(vb / va)
        if not ratios:
            continue
        within = sum(1 for r in ratios if abs(r - 1.0) <= args.tolerance)
        total, inside = total + len(ratios), inside + within
        print(f"| `{name}` | {len(ratios)} | {within} | {statistics.median(ratios):.3f} | "
              f"{min(ratios):.3f}-{max(ratios):.3f} |")
    print(f"\nall gated pairs: {inside} of {total} within ±{args.tolerance:.0%} ({inside / total:.0%})")


if __name__ == "__main__":
    main()
