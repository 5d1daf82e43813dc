"""Write the small Mooncake-format trace shipped in ``matrices/data/agent-trace.jsonl``: seeded, reproducible.

Shape: agent-like traffic of a few conversations whose requests grow turn by turn (each request's ``hash_ids``
repeat the conversation's previous ones and add new blocks), interleaved with one-off requests, arriving as a
Poisson process. Lengths are in tokens of the served model; ``--block-tokens`` must match the workload's
``block_tokens``. Run: ``python benchmarks/make_trace.py > matrices/data/agent-trace.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np


def make_trace(entries: int, rate: float, block_tokens: int, seed: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    next_id, now_ms = 0, 0.0
    conversations: list[list[int]] = []
    lines = []
    for _ in range(entries):
        now_ms += float(rng.exponential(1000.0 / rate))
        if conversations and rng.random() < 0.6:  # a later turn of a running conversation: its blocks, then new ones
            blocks = conversations[int(rng.integers(len(conversations)))]
        else:  # a new conversation or a one-off request
            blocks = []
            conversations.append(blocks)
        grow = int(rng.integers(1, 3))
        blocks.extend(range(next_id, next_id + grow))
        next_id += grow
        input_length = (len(blocks) - 1) * block_tokens + int(rng.integers(block_tokens // 4, block_tokens + 1))
        lines.append({"timestamp": round(now_ms), "input_length": input_length,
                      "output_length": int(rng.integers(8, 33)), "hash_ids": list(blocks)})
        if len(blocks) >= 6:  # a conversation ends before it outgrows a small context
            conversations.remove(blocks)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=48)
    parser.add_argument("--rate", type=float, default=4.0, help="mean requests per second")
    parser.add_argument("--block-tokens", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for line in make_trace(args.entries, args.rate, args.block_tokens, args.seed):
        sys.stdout.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
