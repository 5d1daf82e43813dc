"""Does the machine-speed probe move with the engine when the machine slows down? Validation of the calibration.

A slower machine is made on purpose: ``--hogs`` busy-looping processes share the cores with everything else (the
way a busy neighbour on the host or a throttled VM takes cycles from every process alike). Rounds alternate quiet
and slowed; in each, the probe runs, then one launch of a one-server matrix (the Qwen3-MoE fixture, bf16, no
speculation, concurrency 1 and 4), then the probe again. Prints, per round, the probe's seconds and the engine's
tok/s and TPOT, and the slowed/quiet ratio of each: the probe is a sound correction where its ratio tracks the
engine's. Writes every figure as JSON lines.

    .venv/bin/python docs/studies/reproducibility/machine_speed.py --rounds 4 --hogs 1 --out build/machine-speed
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import yaml

from harness.calibration.probe import probe

MATRIX = {
    "name": "speed",
    "hardware": {"kind": "cpu", "kv_cache_gib": 1},
    "models": {"tiny-qwen3-moe": {"id": "fixture:tiny-qwen3-moe", "max_model_len": 1024, "family": "qwen3"}},
    "workloads": {"random-128x64": {"kind": "random", "input_tokens": 128, "output_tokens": 64,
                                    "num_requests": 128, "warmup_requests": 2}},
    "axes": {"runtime": ["vllm"], "precision": ["bf16"], "speculation": ["off"], "concurrency": [1, 4]},
}
HOG = "while True: pass"


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4, help="pairs of quiet and slowed launches")
    parser.add_argument("--hogs", type=int, default=1, help="busy-looping processes while slowed")
    parser.add_argument("--out", type=Path, default=Path("build/machine-speed"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    matrix = args.out / "speed.yaml"
    matrix.write_text(yaml.safe_dump(MATRIX))
    harness = Path(sys.executable).parent / "harness"
    rows = []
    for round_ in range(args.rounds):
        for slowed in (False, True) if round_ % 2 == 0 else (True, False):
            hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(args.hogs if slowed else 0)]
            try:
                before = probe(f"round {round_}")
                subprocess.run([str(harness), "run", str(matrix), "--force", "--out", str(args.out / "reports")],
                               env={**os.environ, "HARNESS_LOG_LEVEL": "WARNING"}, capture_output=True, check=False)
                after = probe(f"round {round_}")
            finally:
                for hog in hogs:
                    hog.kill()
                    hog.wait()
            for path in sorted((args.out / "reports" / "speed" / "runs").glob("*/summary.json")):
                result = json.loads(path.read_text())
                summary = result.get("summary") or {}
                rows.append({"round": round_, "slowed": slowed, "label": result["label"].rsplit("/", 1)[-1],
                             "probe_s": (before.seconds + after.seconds) / 2,
                             "tok_s": summary.get("output_throughput"),
                             "tpot_ms": (summary.get("tpot_ms") or {}).get("median")})
            print(f"round {round_} {'slowed' if slowed else 'quiet'}: probe {rows[-1]['probe_s']:.3f} s", flush=True)
    (args.out / "rounds.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    print("| cell | probe slowed/quiet (speed) | tok/s slowed/quiet | 1/TPOT slowed/quiet |")
    print("|---|--:|--:|--:|")
    for label in sorted({r["label"] for r in rows}):
        def ratio(key: str, invert: bool, label: str = label) -> float:
            quiet = _geomean([r[key] for r in rows if r["label"] == label and not r["slowed"] and r[key]])
            slow = _geomean([r[key] for r in rows if r["label"] == label and r["slowed"] and r[key]])
            return quiet / slow if invert else slow / quiet
        speeds = (ratio("probe_s", True), ratio("tok_s", False), ratio("tpot_ms", True))
        print(f"| {label} | {speeds[0]:.2f} | {speeds[1]:.2f} | {speeds[2]:.2f} |")


if __name__ == "__main__":
    main()
