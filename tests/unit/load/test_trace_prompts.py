from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.config.workloads import TraceWorkload
from harness.errors import ConfigError
from harness.load import PROMPT_BLOCK, LoadSpec, make_requests, run_load
from harness_testing.loopback import LoopbackConfig, LoopbackServer

SHIPPED = Path(__file__).parents[3] / "matrices" / "data" / "agent-trace.jsonl"


def _write(path: Path, lines: list[Any]) -> str:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return str(path)


def _entry(stamp: float, hashes: list[int], length: int = 20, output: int = 3) -> dict[str, Any]:
    return {"timestamp": stamp, "input_length": length, "output_length": output, "hash_ids": hashes}


def test_shared_hash_ids_share_tokens_and_due_times_follow_the_trace(tmp_path: Path, tiny_tokenizer_dir: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [_entry(100, [0, 1]), _entry(350, [0, 1, 2], 28), _entry(900, [5], 6)])
    workload = TraceWorkload(path=path, block_tokens=10, time_scale=0.5)
    first, second, third = make_requests(workload, 10, tiny_tokenizer_dir, offset=PROMPT_BLOCK)
    assert len(first.prompt) == 20 and len(second.prompt) == 28 and len(third.prompt) == 6
    assert second.prompt[:20] == first.prompt  # blocks 0 and 1, the same tokens
    assert third.prompt != second.prompt[:6]
    assert [r.due_s for r in (first, second, third)] == [0.0, 0.125, 0.4]
    again = make_requests(workload, 3, tiny_tokenizer_dir, offset=2 * PROMPT_BLOCK)  # another cell
    assert again[0].prompt != first.prompt
    warm = make_requests(workload, 1, tiny_tokenizer_dir, offset=PROMPT_BLOCK, warmup=True)
    assert warm[0].due_s is None and warm[0].prompt[:10] != first.prompt[:10]


def test_the_shipped_trace_reuses_blocks(tiny_tokenizer_dir: Path) -> None:
    workload = TraceWorkload(path=str(SHIPPED), block_tokens=64)
    requests = make_requests(workload, 100, tiny_tokenizer_dir, offset=PROMPT_BLOCK)
    lines = [json.loads(line) for line in SHIPPED.read_text().splitlines()]
    assert len(requests) == len(lines) == 48
    seen: dict[int, tuple[int, ...]] = {}
    shared = 0
    for request, line in zip(requests, lines, strict=True):
        for position, h in enumerate(line["hash_ids"]):
            block = request.prompt[position * 64:(position + 1) * 64]
            if h in seen and len(block) == 64:
                assert block == seen[h]
                shared += 1
            elif len(block) == 64:
                seen[h] = block
    assert shared > 20


@pytest.mark.parametrize(("lines", "key", "problem"), [
    ([_entry(0, [0]), {"timestamp": 5, "input_length": 3, "hash_ids": []}], "line 2", "missing output_length"),
    ([_entry(10, [0]), _entry(5, [1])], "line 2: timestamp", "comes before the previous line's 10"),
    ([_entry(0, [0]), "{not json"], "line 2", "not JSON"),
    ([_entry(0, [0], length=0)], "line 1: input_length", "not a positive token count"),
    ([_entry(0, ["a"])], "line 1: hash_ids", "not a list of integers"),
])
def test_bad_traces_name_the_file_line_and_fix(tmp_path: Path, tiny_tokenizer_dir: Path, lines: list[Any],
                                               key: str, problem: str) -> None:
    path = _write(tmp_path / "bad.jsonl", lines)
    with pytest.raises(ConfigError) as caught:
        make_requests(TraceWorkload(path=path), 1, tiny_tokenizer_dir)
    assert caught.value.source == path and caught.value.key == key and problem in caught.value.problem
    assert caught.value.fix


def test_a_missing_trace_file_says_so(tmp_path: Path, tiny_tokenizer_dir: Path) -> None:
    with pytest.raises(ConfigError, match="no such trace file"):
        make_requests(TraceWorkload(path=str(tmp_path / "nope.jsonl")), 1, tiny_tokenizer_dir)


async def test_replay_keeps_the_traces_timing(tmp_path: Path, tiny_tokenizer_dir: Path) -> None:
    """Requests leave when the trace says, over real sockets: p99 lateness within 5 ms beyond what the machine made
    the client wait (its event loop's measured lag, and its time queued for a core), so a busy neighbour cannot
    fail it and a schedule that drifts or waits on earlier answers (hundreds of ms here) still does."""
    rng = np.random.default_rng(0)
    stamps = np.cumsum(rng.exponential(15.0, size=120))  # ~67 req/s, gaps from 0 to ~100 ms
    path = _write(tmp_path / "t.jsonl", [_entry(round(float(t), 3), [i % 7], 12, 4) for i, t in enumerate(stamps)])
    workload = TraceWorkload(path=path, block_tokens=8, warmup_requests=0)
    async with LoopbackServer(LoopbackConfig(itl_ms=1)).serve() as url:
        result = await run_load(LoadSpec(base_url=url, model="m", workload=workload, concurrency=64,
                                         tokenizer_dir=tiny_tokenizer_dir, progress=False))
    assert len(result.records) == 120 and all(r.ok for r in result.records)
    late_ms = np.array([(r.send_time - r.due_time) * 1000.0 for r in result.records if r.due_time is not None])
    assert late_ms.size == 120 and late_ms.min() >= -0.5
    assert result.client is not None
    machine_ms = result.client.loop_lag_max_ms + 1000.0 * (result.client.run_queue_wait_s or 0.0)
    assert float(np.percentile(late_ms, 99)) < 5.0 + machine_ms, (late_ms.max(), result.client)
    gaps = np.diff([r.due_time for r in result.records if r.due_time is not None])
    assert np.allclose(gaps, np.diff(stamps) / 1000.0, atol=1e-6)
