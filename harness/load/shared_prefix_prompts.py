"""The ``shared-prefix`` workload's prompts: a few long prefixes, each followed by many short unique questions.

Request ``i`` belongs to group ``i mod groups``; the group's prefix is seeded by the group and the prompt block
(``PROMPT_BLOCK``), so every request of a cell in one group shares the prefix, while another cell on the same
server (another block) and the warm-up (another stream) get prefixes of their own and never pre-warm the cache.
After a group's first request, a prefix-caching engine serves the prefix from cache: the cell's
``server.prefix_cache.hit_rate`` shows it, and its TTFT against a ``random`` workload of equal length shows what
it buys.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.config.workloads import SharedPrefixWorkload
from harness.load.prompts import PROMPT_BLOCK, PlannedRequest, WorkloadKind
from harness.load.vocabulary import load_vocabulary

_PREFIX_STREAM = 3


def shared_prefix_requests(
    workload: SharedPrefixWorkload, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool
) -> list[PlannedRequest]:
    vocab = load_vocabulary(tokenizer_dir)
    stream = 1 if warmup else 0
    prefixes: dict[tuple[int, int], tuple[tuple[int, ...], str]] = {}
    planned = []
    for index in range(offset, offset + count):
        key = (index // PROMPT_BLOCK, index % workload.groups)
        if key not in prefixes:
            prefix_rng = np.random.default_rng((workload.seed, _PREFIX_STREAM, stream, *key))
            prefix_ids = vocab.random_ids(prefix_rng, workload.prefix_tokens)
            # Chat sends text; decoding prefix and question apart keeps the prefix text (and so the cached
            # token blocks) identical within a group, where one decode could merge tokens across the seam.
            prefix_text = vocab.text_of_length(prefix_rng, prefix_ids) if workload.api == "chat" else ""
            prefixes[key] = (prefix_ids, prefix_text)
        prefix_ids, prefix_text = prefixes[key]
        rng = np.random.default_rng((workload.seed, stream, index))
        question = vocab.random_ids(rng, workload.question_tokens)
        prompt: tuple[int, ...] | str = prefix_ids + question
        if workload.api == "chat":
            prompt = prefix_text + " " + vocab.text_of_length(rng, question)
        planned.append(PlannedRequest(
            index=index, warmup=warmup, api=workload.api, prompt=prompt,
            input_tokens=workload.prefix_tokens + workload.question_tokens, max_tokens=workload.output_tokens,
            temperature=workload.temperature, ignore_eos=workload.ignore_eos,
        ))
    return planned


class SharedPrefixKind(WorkloadKind[SharedPrefixWorkload]):
    """Independent requests whose groups share a long prefix."""

    name = "shared-prefix"
    model = SharedPrefixWorkload

    def requests(self, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool) -> list[PlannedRequest]:
        return shared_prefix_requests(self.workload, count, tokenizer_dir, offset, warmup)
