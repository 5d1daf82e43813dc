"""The trace writer: its defaults write the committed trace byte for byte, what it writes is a trace the harness
reads, and its requests grow conversations block by block as its docstring says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.load.trace_prompts import read_trace
from tools.agent_trace import ENDS_AT_BLOCKS, TRACE, main, make_trace

REPO = Path(__file__).resolve().parents[2]


def test_the_defaults_write_the_committed_trace() -> None:
    # the shipped file must be reproducible: editing the tool means regenerating it (the tool's docstring says how)
    written = "".join(json.dumps(line) + "\n" for line in make_trace())
    assert written == (REPO / TRACE).read_text()


def test_what_it_writes_is_a_trace_the_harness_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["--entries", "30", "--rate", "20", "--block-tokens", "16", "--seed", "3"])
    path = tmp_path / "trace.jsonl"
    path.write_text(capsys.readouterr().out)
    entries = read_trace(str(path))
    assert len(entries) == 30
    assert entries[-1].timestamp_ms < 30 * 1000 / 20 * 3  # Poisson arrivals at 20/s: 1.5 s expected, never 4.5 s
    assert all(e.input_length <= 16 * len(e.hash_ids) for e in entries)  # blocks of --block-tokens, not 64


@pytest.mark.parametrize("block_tokens", [16, 64])
def test_each_request_grows_a_conversation_by_one_or_two_fresh_blocks(block_tokens: int) -> None:
    lines = make_trace(entries=200, rate=4.0, block_tokens=block_tokens, seed=7)
    seen: list[list[int]] = []
    highest = -1
    turns = 0
    for line in lines:
        blocks = line["hash_ids"]
        earlier = max((b for b in seen if blocks[:len(b)] == b), key=len, default=[])
        fresh = blocks[len(earlier):]
        assert 1 <= len(fresh) <= 2 and fresh[0] == highest + 1 and fresh == list(range(fresh[0], fresh[-1] + 1))
        assert len(blocks) <= ENDS_AT_BLOCKS + 1  # a conversation ends once it holds ENDS_AT_BLOCKS
        # every block full but the last, which holds a quarter to all of one
        full = (len(blocks) - 1) * block_tokens
        assert full + block_tokens // 4 <= line["input_length"] <= full + block_tokens
        assert 8 <= line["output_length"] <= 32
        highest = fresh[-1]
        turns += bool(earlier)
        seen.append(blocks)
    assert [line["timestamp"] for line in lines] == sorted(line["timestamp"] for line in lines)
    assert 0.4 < turns / len(lines) < 0.8  # later turns 60% of the time once a conversation runs
