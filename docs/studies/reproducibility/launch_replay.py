"""How far one machine's baseline launches spread, and whether scaling each by its own machine-speed probe helps.

Usage: ``.venv/bin/python docs/studies/reproducibility/launch_replay.py [lock/default.baseline.json]
[--isa AVX-512] [--tolerance 0.1] [--first N]``.

For one machine's entry of a committed baseline (picked by the ISA in its fingerprint), this prints, for each
exponent k of 0 (as measured) to 3: the median and p90 launch noise of the gated timing figures, and the share of
them the gate's rule (``harness.metrics.intervals``: Student's t on the log values, one-sided 95% bounds against
±tolerance) calls conclusive when each launch is judged against the other launches of its cell (leave one out:
the same machine within one session, optimistic for the gate). Exponent k scales each launch's timings by
(median probe / that launch's probe) ** k before anything is judged: what ``gates.machine_speed: adjust`` does with
a run's median probe, applied launch by launch. ``--first N`` reads only the first N launches (under four, the
noise alone: leaving one out then leaves too few).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path
from typing import Any, Literal

from harness.metrics.intervals import GATE_CONFIDENCE, judge, ratio_interval

Direction = Literal["higher", "lower"]
TIMING: dict[str, Direction] = {"output_throughput": "higher", "interactivity": "higher", "ttft_ms.median": "lower",
          "tpot_ms.median": "lower", "itl_ms.median": "lower"}


def machine_entry(path: Path, isa: str) -> dict[str, Any]:
    machines = json.loads(path.read_text())["machines"]
    entries = machines if isinstance(machines, list) else list(machines.values())
    found = [m for m in entries if m["hardware"].get("isa") == isa]
    if not found:
        raise SystemExit(f"{path}: no machine with ISA {isa!r}")
    return dict(found[0])


def scaled(values: list[float | None], probes: list[float | None], direction: Direction, k: int) -> list[float]:
    """The launches' values as a machine at the median probe speed would have measured them."""
    known = [p for p in probes if p]
    reference = statistics.median(known) if known else None
    out = []
    for value, probe in zip(values, probes, strict=False):
        if not value:
            continue
        speed = (reference / probe) ** k if reference and probe else 1.0
        out.append(value * speed if direction == "lower" else value / speed)
    return out


def replay(entry: dict[str, Any], k: int, tolerance: float, first: int | None = None
           ) -> tuple[list[float], int, int]:
    noises: list[float] = []
    judged = conclusive = 0
    for cell in entry["cells"].values():
        for name, direction in TIMING.items():
            values = scaled(cell["values"].get(name, [])[:first], cell["machine_s"][:first], direction, k)
            if len(values) < 2:
                continue
            noises.append(math.expm1(statistics.stdev(math.log(v) for v in values)))
            if len(values) < 4:
                continue
            for i, now in enumerate(values):
                interval = ratio_interval(values[:i] + values[i + 1:], [now], GATE_CONFIDENCE)
                judged += 1
                conclusive += interval is not None and judge(interval, direction, tolerance) != "inconclusive"
    return sorted(noises), judged, conclusive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline", nargs="?", type=Path, default=Path("lock/default.baseline.json"))
    parser.add_argument("--isa", default="AVX-512")
    parser.add_argument("--tolerance", type=float, default=0.10)
    parser.add_argument("--first", type=int, default=None, help="only the first N launches")
    args = parser.parse_args()
    entry = machine_entry(args.baseline, args.isa)
    print(f"{entry['hardware']}: {len(entry['cells'])} cells")
    for k in range(4):
        noises, judged, conclusive = replay(entry, k, args.tolerance, args.first)
        under = sum(n < 0.03 for n in noises)
        replayed = f"{conclusive} of {judged} ({conclusive / judged:.0%}) conclusive at ±{args.tolerance:.0%}" \
            if judged else "too few launches to leave one out"
        print(f"exponent {k}: launch noise median {noises[len(noises) // 2]:.1%}, p90 "
              f"{noises[int(0.9 * len(noises))]:.1%}, {under} of {len(noises)} under 3%; leave one out: {replayed}")


if __name__ == "__main__":
    main()
