"""What the peer clients' tests share: the cross-check spec their argv is built for, its flags read back, and the
stored result file of each peer (``tests/unit/crosscheck_peers/data/<name>/``).

The stored files are real: each peer as ``make peers`` installs it, run once through its entry's own argv against
the fake engine (``python -m harness_testing.fake_engine --port P --model m --ttft-ms 20 --itl-ms 5``) with the
tiny Qwen3-MoE fixture's tokenizer, 8 requests at concurrency 2 of ``random`` 32 -> 16 tokens with range ratio 0.2
(2026-11-29). The numbers the tests expect are the ones each peer printed on its console for that run. GuideLLM's
per-request records are trimmed to the first one of each status; its summaries, which the harness reads, are whole.
"""

from __future__ import annotations

from pathlib import Path

from harness.config import RandomWorkload
from harness.crosscheck_result import CrosscheckSpec

DATA = Path(__file__).resolve().parents[1] / "unit" / "crosscheck_peers" / "data"


def peer_spec(peers_dir: Path, *, range_ratio: float = 0.2, concurrency: int = 2) -> CrosscheckSpec:
    """The workload the stored results were made with, against a server that is never contacted."""
    workload = RandomWorkload(input_tokens=32, output_tokens=16, range_ratio=range_ratio, num_requests=8, seed=4)
    return CrosscheckSpec(base_url="http://127.0.0.1:18123", model="m", tokenizer_dir=Path("/models/tok"),
                          workload=workload, concurrency=concurrency, rounds=2, request_timeout_s=60.0,
                          vllm_python="/engines/vllm/bin/python", peers_dir=peers_dir)


def flags(argv: list[str]) -> dict[str, str | bool]:
    """``--flag value`` pairs, and ``True`` for a flag followed by another flag or nothing."""
    pairs = zip(argv, [*argv[1:], "--"], strict=True)
    return {a: (b if not b.startswith("--") else True) for a, b in pairs if a.startswith("--")}
