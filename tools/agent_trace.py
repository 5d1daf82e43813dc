"""Write the small Mooncake-format trace shipped in ``matrices/data/agent-trace.jsonl``: seeded, reproducible.

Shape: agent-like traffic of a few conversations whose requests grow turn by turn (each request's ``hash_ids``
repeat the conversation's previous ones and add new blocks), interleaved with one-off requests, arriving as a
Poisson process. Lengths are in tokens of the served model; ``--block-tokens`` must match the workload's
``block_tokens``. The defaults write the committed file (``tests/tools/test_agent_trace.py`` holds them to it)::

    .venv/bin/python -m tools.agent_trace > matrices/data/agent-trace.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TypedDict

import numpy as np

TRACE = "matrices/data/agent-trace.jsonl"
"""Where the repository keeps the trace these defaults write."""
ENDS_AT_BLOCKS = 6
"""A conversation ends once its prompt holds this many blocks, before it outgrows a small context."""


class TraceLine(TypedDict):
    """One request in Mooncake's format, as ``harness.load.trace_prompts`` reads it."""

    timestamp: int
    input_length: int
    output_length: int
    hash_ids: list[int]


def make_trace(entries: int = 48, rate: float = 4.0, block_tokens: int = 64, seed: int = 0) -> list[TraceLine]:
    """``entries`` requests at a mean ``rate`` a second: a later turn of a running conversation 60% of the time
    (its blocks, then one or two new ones), else a new conversation or a one-off request."""
    rng = np.random.default_rng(seed)
    next_id, now_ms = 0, 0.0
    conversations: list[list[int]] = []
    lines: list[TraceLine] = []
    for _ in range(entries):
        now_ms += float(rng.exponential(1000.0 / rate))
        if conversations and rng.random() < 0.6:
            blocks = conversations[int(rng.integers(len(conversations)))]
        else:
            blocks = []
            conversations.append(blocks)
        grow = int(rng.integers(1, 3))
        blocks.extend(range(next_id, next_id + grow))
        next_id += grow
        # the last block is partly filled, so that prompts of one conversation differ in length within a block
        input_length = (len(blocks) - 1) * block_tokens + int(rng.integers(block_tokens // 4, block_tokens + 1))
        lines.append({"timestamp": round(now_ms), "input_length": input_length,
                      "output_length": int(rng.integers(8, 33)), "hash_ids": list(blocks)})
        if len(blocks) >= ENDS_AT_BLOCKS:
            conversations.remove(blocks)
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.agent_trace", description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=48)
    parser.add_argument("--rate", type=float, default=4.0, help="mean requests per second")
    parser.add_argument("--block-tokens", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for line in make_trace(args.entries, args.rate, args.block_tokens, args.seed):
        sys.stdout.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
