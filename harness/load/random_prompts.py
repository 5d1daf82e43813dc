"""The ``random`` workload's prompts: random ordinary token ids of the served model, lengths around the targets.

As vLLM bench's ``random`` dataset: lengths uniform in ``[floor(L(1-r)), ceil(L(1+r))]``; completions send the ids
themselves (token-exact), chat sends text that re-encodes to the drawn length.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from harness.config.workloads import RandomWorkload
from harness.load.prompts import PlannedRequest, WorkloadKind
from harness.load.vocabulary import load_vocabulary


def draw_length(rng: np.random.Generator, mean: int, range_ratio: float) -> int:
    """Uniform integer in [floor(L(1-r)), ceil(L(1+r))], at least 1 (vLLM's random dataset bounds)."""
    low = max(1, math.floor(mean * (1 - range_ratio)))
    high = max(low, math.ceil(mean * (1 + range_ratio)))
    return int(rng.integers(low, high + 1))


def random_requests(
    workload: RandomWorkload, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool
) -> list[PlannedRequest]:
    vocab = load_vocabulary(tokenizer_dir)
    stream = 1 if warmup else 0
    planned = []
    for index in range(offset, offset + count):
        rng = np.random.default_rng((workload.seed, stream, index))
        input_len = draw_length(rng, workload.input_tokens, workload.range_ratio)
        output_len = draw_length(rng, workload.output_tokens, workload.range_ratio)
        ids = vocab.random_ids(rng, input_len)
        prompt: tuple[int, ...] | str = ids
        if workload.api == "chat":
            prompt = vocab.text_of_length(rng, ids)
        planned.append(PlannedRequest(
            index=index, warmup=warmup, api=workload.api, prompt=prompt, input_tokens=input_len,
            max_tokens=output_len, temperature=workload.temperature, ignore_eos=workload.ignore_eos,
        ))
    return planned


class RandomKind(WorkloadKind[RandomWorkload]):
    """Independent requests of random token ids around the target lengths."""

    name = "random"
    model = RandomWorkload

    def requests(self, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool) -> list[PlannedRequest]:
        return random_requests(self.workload, count, tokenizer_dir, offset, warmup)
