"""Parity and profiling against real vLLM CPU servers (slow: two launches, about 2 min beside the fixture build).

What no fake can show: vLLM's hermes tool parser and its grammar-constrained ``tool_choice: required`` answer the
BFCL requests the parity stage sends; the parity gate flags a real drop and stays quiet on none; and vLLM's torch
profiler, opened and closed through its own ``/start_profile`` and ``/stop_profile``, writes a trace the profile
stage reduces to the grouped table.

The model is the known-answer instrument ``tiny-qwen3-recall``: it has learnt the seeded ``live_simple`` sample this
matrix scores, so its accuracy there is high and known, and its mixed 2/3-bit export ``tiny-qwen3-recall-int2`` (a
degraded recipe a user could ship) forgets much of it. The export must fail with McNemar's exact p and a bootstrap
interval below zero; the reference, judged on a rerun of its own free decoding, must not be flagged. (Its int8 W8A8
export is served in make test by the Slurm test's job, which checks vLLM's int8 kernel; `make bench` judges its
parity.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.engines import NEEDS_VLLM
from tests.support.matrices import ENGINE_CHECKS

pytestmark = [pytest.mark.integration, NEEDS_VLLM,
              pytest.mark.fixtures("tiny-qwen3-recall", "tiny-qwen3-recall-int2")]

MATRIX = """
name: evidence
hardware: {kind: cpu, kv_cache_gib: 0.5}
models:
  recall: {id: "fixture:tiny-qwen3-recall", max_model_len: 2048, family: qwen3,
           checkpoints: {int2: "fixture:tiny-qwen3-recall-int2"},
           quantization: {int2: none}}
workloads:
  w: {kind: random, input_tokens: 64, output_tokens: 16, num_requests: 8, warmup_requests: 1}
axes:
  precision: [bf16, int2]
  concurrency: [2]
parity: {categories: [live_simple], limit: 24, decoding: [free, required], max_drop_pp: 1.0, max_tokens: 80}
profile: {cells: [{precision: bf16, concurrency: 2}], requests: 4}
telemetry: {expert_load: true}
executor: {kind: local, start_ahead: true}
""" + ENGINE_CHECKS
REFERENCE, LOW_BIT = "recall/vllm/bf16/tp1/off/w/c2", "recall/vllm/int2/tp1/off/w/c2"


def verdicts(runs: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    found = {}
    for path in runs.glob("*/parity.json"):
        label = json.loads((path.parent / "summary.json").read_text())["label"]
        found[label] = json.loads(path.read_text())
    return found


def test_parity_catches_a_low_bit_export_and_a_torch_profile_is_captured(write_matrix: Callable[..., Path],
                                                                         tmp_path: Path) -> None:
    """The parity gate fails the int2 export and not the bf16 reference, a torch profile of the reference cell is
    reduced to the grouped table, and vLLM's expert-load collector counts exactly the tokens each cell's requests
    computed, in every MoE layer, on both checkpoints.

    Launches: two vLLM servers, one per checkpoint of the recall instrument (bf16 with vLLM's torch profiler,
    int2), started together (``start_ahead``: the second frozen until its turn, the feature's real-engine check);
    each serves its workload cell and both parity decodings, so every check here rides on a launch the matrix needs
    anyway.
    """
    out = tmp_path / "reports"
    done = subprocess.run([sys.executable, "-m", "harness", "run", str(write_matrix(MATRIX)), "--out", str(out)],
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "starting recall/vllm/int2/tp1/off beside recall/vllm/bf16/tp1/off" in done.stderr  # both started at once
    for path in (out / "evidence" / "parity").glob("*/*.json"):
        run = json.loads(path.read_text())
        assert run["error"] is None and len(run["items"]) == 24, path  # every item answered or scored
    found = verdicts(out / "evidence" / "runs")
    assert set(found) == {REFERENCE, LOW_BIT}

    reference = found[REFERENCE]
    rerun = reference["comparisons"]["free"]
    print("reference rerun:", rerun["reason"], f"{rerun['right_to_wrong']} lost / {rerun['wrong_to_right']} gained")
    assert rerun["rerun"] and rerun["reference_accuracy"] >= 0.5  # the instrument knows its items
    assert reference["passed"] is True and set(reference["comparisons"]) == {"free", "required"}

    low_bit = found[LOW_BIT]["comparisons"]["free"]
    print("int2 export:", low_bit["reason"], f"CI [{low_bit['ci_low_pp']:.1f}, {low_bit['ci_high_pp']:.1f}] pp",
          f"{low_bit['right_to_wrong']} lost / {low_bit['wrong_to_right']} gained")
    assert found[LOW_BIT]["passed"] is False and low_bit["passed"] is False and not low_bit["rerun"]
    assert low_bit["mcnemar_p"] < 0.05 and low_bit["ci_high_pp"] < 0
    assert low_bit["right_to_wrong"] > low_bit["wrong_to_right"]

    summary = json.loads(next((tmp_path / "profiles" / "evidence").glob("*/summary.json")).read_text())
    assert summary["outcome"]["status"] == "captured", summary
    groups = {g["group"]: g for g in summary["table"]["groups"]}
    assert groups and sum(g["share_pct"] for g in groups.values()) == pytest.approx(100.0, abs=0.5)
    report = (out / "evidence" / "report.md").read_text()
    assert "| MoE GEMM |" in report and "nsys profile --trace=cuda,nvtx,osrt" in report
    assert "Not available on any cell: CPU hardware" in report
    assert "`int2` failed" in report

    for path in (out / "evidence" / "runs").glob("*/expert_load.json"):  # no speculation, every cache hit reported
        record = json.loads(path.read_text())
        counts = record["counts"]
        assert counts is not None, record["reason"]
        assert counts["layers"] == [0, 1, 2] and counts["experts"] == 4 and counts["top_k"] == 2, path
        assert counts["rows"] == [record["expected_rows"]] * 3 and record["requests"] == 8, path
        assert all(sum(row) == 2 * record["expected_rows"] for row in counts["counts"]), path
        assert 0 < counts["hook_seconds"] < record["measured_s"]
    assert len(list((out / "evidence" / "runs").glob("*/expert_load.json"))) == 2
    assert "Expert load: the routing each cell really did" in report and "plots/experts-" in report
