"""Launch-to-launch noise of the vLLM CPU engine under engine settings, one knob at a time, launches interleaved.

Each variant is the same one-server matrix (the Qwen3-MoE fixture, bf16, no speculation, concurrency 1/4/16) with
one engine environment variable set. Every round launches every variant once, in turn, so the machine's slow drift
lands on all of them; the machine-speed probe (``harness.calibration.probe``) runs before every launch. Prints, per
variant and cell, the median output tok/s and TPOT over the launches and their spread (slowest / fastest launch),
and the correlation of the probe's speed with the engine's across all launches. Writes every figure as JSON lines.

    .venv/bin/python docs/studies/reproducibility/launch_noise.py --rounds 3 --out build/launch-noise
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from statistics import median

import yaml

from harness.calibration.probe import probe

VARIANTS: dict[str, dict[str, object]] = {
    "default": {},
    "reserved-0": {"env": {"VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}},
    "nobind": {"env": {"VLLM_CPU_OMP_THREADS_BIND": "nobind"}},
    "mp-off": {"env": {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}},
    "eager": {"extra_args": ["--enforce-eager"]},
    "requests-256": {"requests": 256},
}


def matrix(name: str, variant: dict[str, object], requests: int) -> dict[str, object]:
    runtime = {key: variant[key] for key in ("env", "extra_args") if key in variant}
    return {
        "name": name,
        "hardware": {"kind": "cpu", "kv_cache_gib": 1},
        "models": {"tiny-qwen3-moe": {"id": "fixture:tiny-qwen3-moe", "max_model_len": 1024, "family": "qwen3"}},
        "workloads": {"random-128x64": {"kind": "random", "input_tokens": 128, "output_tokens": 64,
                                        "num_requests": requests, "warmup_requests": 2}},
        "axes": {"runtime": ["vllm"], "precision": ["bf16"], "speculation": ["off"], "concurrency": [1, 4, 16]},
        "runtimes": {"vllm": runtime},
        **({"server": variant["server"]} if "server" in variant else {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--out", type=Path, default=Path("build/launch-noise"))
    args = parser.parse_args()
    names = args.variants.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    lines = args.out / "launches.jsonl"
    for name in names:
        variant = VARIANTS[name]
        requests = int(variant["requests"]) if "requests" in variant else args.requests  # type: ignore[call-overload]
        (args.out / f"{name}.yaml").write_text(yaml.safe_dump(matrix(f"noise-{name}", variant, requests)))
    harness = Path(sys.executable).parent / "harness"
    for round_ in range(args.rounds):
        for name in names:
            speed = probe(f"round {round_} before {name}")
            env = {**os.environ, "HARNESS_LOG_LEVEL": "WARNING"}
            run = subprocess.run([str(harness), "run", str(args.out / f"{name}.yaml"), "--force",
                                  "--out", str(args.out / "reports")], env=env, capture_output=True, text=True)
            for summary_path in sorted((args.out / "reports" / f"noise-{name}" / "runs").glob("*/summary.json")):
                result = json.loads(summary_path.read_text())
                s = result.get("summary") or {}
                row = {"round": round_, "variant": name, "label": result["label"], "status": result["status"],
                       "probe_s": speed.seconds, "python_s": speed.python_s, "torch_s": speed.torch_s,
                       "output_throughput": s.get("output_throughput"),
                       "tpot_ms": (s.get("tpot_ms") or {}).get("median"),
                       "ttft_ms": (s.get("ttft_ms") or {}).get("median"), "run_rc": run.returncode}
                with lines.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
            print(f"round {round_} {name}: rc {run.returncode}, probe {speed.seconds:.4f}s", flush=True)
    report(lines)


def _noise(values: list[float]) -> float:
    """Launch-to-launch noise as the gate measures it: exp(sd of the log values) - 1."""
    logs = [math.log(v) for v in values]
    mean = sum(logs) / len(logs)
    return math.expm1(math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))) if len(logs) > 1 else 0.0


def report(lines: Path) -> None:
    rows = [json.loads(line) for line in lines.read_text().splitlines()]
    by: dict[tuple[str, str], list[dict[str, float]]] = {}
    for row in rows:
        if row["status"] == "ok":
            by.setdefault((row["variant"], row["label"].rsplit("/", 1)[-1]), []).append(row)
    print("| variant | cell | launches | tok/s median | tok/s slowest/fastest | tok/s launch noise | TPOT median ms | "
          "TPOT slowest/fastest | TPOT launch noise |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|")
    for (variant, cell), found in sorted(by.items()):
        tok = [r["output_throughput"] for r in found]
        tpot = [r["tpot_ms"] for r in found]
        print(f"| {variant} | {cell} | {len(found)} | {median(tok):.0f} | {min(tok) / max(tok):.2f} | "
              f"±{_noise(tok):.0%} | {median(tpot):.2f} | {max(tpot) / min(tpot):.2f} | ±{_noise(tpot):.0%} |")
    pairs = [(1 / r["probe_s"], r["output_throughput"]) for r in rows if r["status"] == "ok"]
    if len(pairs) > 2:
        xs, ys = [math.log(p[0]) for p in pairs], [math.log(p[1]) for p in pairs]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        cov = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
        var = math.sqrt(sum((x - mx) ** 2 for x in xs) * sum((y - my) ** 2 for y in ys))
        print(f"correlation of log probe speed with log tok/s over {len(pairs)} cells: {cov / var if var else 0:.2f}")


if __name__ == "__main__":
    main()
