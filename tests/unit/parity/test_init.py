from __future__ import annotations

import subprocess
import sys

import harness.parity


def test_public_api_is_curated() -> None:
    assert len(set(harness.parity.__all__)) == len(harness.parity.__all__)
    assert set(harness.parity.__all__) <= set(vars(harness.parity))
    assert {"load_items", "run_bfcl", "compare", "cell_parity", "write_run", "read_run"} <= set(harness.parity.__all__)


def test_bfcl_loads_without_its_heavy_dependencies() -> None:
    # In a fresh interpreter: the checker and data path import no vendor SDK and write nothing into site-packages.
    code = ("import sys; from harness.parity import load_items; from harness.parity.scoring import check; "
            "load_items(['simple_python'], limit=1); "
            "heavy = {'anthropic', 'cohere', 'mistralai', 'google', 'boto3', 'qwen_agent', 'tree_sitter', 'openai'}; "
            "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr
