"""Parity and profiling against a real vLLM CPU server (slow: one launch, about 1.5 min).

What no fake can show: vLLM's hermes tool parser and its grammar-constrained ``tool_choice: required`` answer the
BFCL requests the parity stage sends, and vLLM's torch profiler, opened and closed through its own
``/start_profile`` and ``/stop_profile``, writes a trace the profile stage reduces to the grouped table.
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
name: evidence
hardware: {kind: cpu, kv_cache_gib: 0.5}
models:
  q: {id: "fixture:tiny-qwen3-moe", max_model_len: 1024, family: qwen3}
workloads:
  w: {kind: random, input_tokens: 64, output_tokens: 16, num_requests: 8, warmup_requests: 1}
axes:
  concurrency: [2]
parity: {categories: [simple_python, irrelevance], limit: 3, decoding: [free, required], max_tokens: 64}
profile: {cells: [{concurrency: 2}], requests: 4}
"""


@pytest.fixture(scope="module", autouse=True)
def fixtures_built() -> None:
    from harness.fixtures import build_fixtures

    build_fixtures(["tiny-qwen3-moe"])


def test_parity_and_a_torch_profile_on_a_real_server(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    matrix = write_matrix(MATRIX)
    out = tmp_path / "reports"
    done = subprocess.run([sys.executable, "-m", "harness", "run", str(matrix), "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    cell_dir = next((out / "evidence" / "runs").iterdir())
    parity = json.loads((cell_dir / "parity.json").read_text())
    # the reference server against itself: judged, and passes by construction
    assert parity["passed"] is True and set(parity["comparisons"]) == {"free", "required"}
    for decoding in ("free", "required"):
        run = json.loads((out / "evidence" / "parity" / parity_server(out) / f"{decoding}.json").read_text())
        assert run["error"] is None and len(run["items"]) >= 3  # every item answered or scored, none crashed
    summary = json.loads(next((tmp_path / "profiles" / "evidence").glob("*/summary.json")).read_text())
    assert summary["outcome"]["status"] == "captured", summary
    groups = {g["group"]: g for g in summary["table"]["groups"]}
    assert groups and sum(g["share_pct"] for g in groups.values()) == pytest.approx(100.0, abs=0.5)
    report = (out / "evidence" / "report.md").read_text()
    assert "| MoE GEMM |" in report and "nsys profile --trace=cuda,nvtx,osrt" in report
    assert "Not available on any cell: CPU hardware" in report


def parity_server(out: Path) -> str:
    return next((out / "evidence" / "parity").iterdir()).name
