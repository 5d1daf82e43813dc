"""The parity gate on real vLLM CPU servers: it flags a real drop and stays quiet on none (slow: two launches).

The instrument ``tiny-qwen3-recall`` has learnt the seeded ``live_simple`` sample this matrix scores, so its accuracy
there is high and known; its mixed 2/3-bit export ``tiny-qwen3-recall-int2`` (a degraded recipe a user could ship)
forgets much of it. ``harness run`` launches both, runs BFCL through each engine's tool parser, reruns the reference,
and writes every cell's verdict: the export must fail with McNemar's exact p and a bootstrap interval below zero,
and the reference judged on its own rerun must pass.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
pytest.importorskip("vllm")

MATRIX = """
name: detect
hardware: {kind: cpu, kv_cache_gib: 0.5}
models:
  recall: {id: "fixture:tiny-qwen3-recall", max_model_len: 2048, family: qwen3,
           checkpoints: {int2: "fixture:tiny-qwen3-recall-int2"}, quantization: {int2: none}}
workloads:
  w: {kind: random, input_tokens: 32, output_tokens: 8, num_requests: 2, warmup_requests: 1}
axes:
  precision: [bf16, int2]
  concurrency: [1]
parity: {categories: [live_simple], limit: 40, decoding: [free], reference: bf16, max_drop_pp: 1.0, max_tokens: 160}
"""


def verdicts(runs: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    found = {}
    for path in runs.glob("*/parity.json"):
        label = json.loads((path.parent / "summary.json").read_text())["label"]
        found[label] = json.loads(path.read_text())
    return found


def test_the_low_bit_export_is_flagged_and_the_reference_rerun_is_not(write_matrix: Callable[..., Path],
                                                                        tmp_path: Path) -> None:
    out = tmp_path / "reports"
    done = subprocess.run([sys.executable, "-m", "harness", "run", str(write_matrix(MATRIX)), "--out", str(out)],
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    found = verdicts(out / "detect" / "runs")
    assert set(found) == {"recall/vllm/bf16/tp1/off/w/c1", "recall/vllm/int2/tp1/off/w/c1"}

    reference = found["recall/vllm/bf16/tp1/off/w/c1"]["comparisons"]["free"]
    print("reference rerun:", reference["reason"])
    assert reference["reason"].startswith("rerun of the reference against its first run")
    assert reference["reference_accuracy"] >= 0.5  # the instrument knows its items: there is something to lose
    assert reference["passed"] is True and reference["paired_items"] == 40

    degraded = found["recall/vllm/int2/tp1/off/w/c1"]
    low_bit = degraded["comparisons"]["free"]
    print("int2 export:", low_bit["reason"], f"CI [{low_bit['ci_low_pp']:.1f}, {low_bit['ci_high_pp']:.1f}] pp",
          f"{low_bit['right_to_wrong']} lost / {low_bit['wrong_to_right']} gained")
    assert degraded["passed"] is False and low_bit["passed"] is False
    assert low_bit["mcnemar_p"] < 0.05 and low_bit["ci_high_pp"] < 0
    assert low_bit["right_to_wrong"] > low_bit["wrong_to_right"]
