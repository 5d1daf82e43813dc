"""Workload → the exact requests a cell sends: prompts and output lengths, planned before any timing starts.

This module owns the registry from a workload's ``kind`` to the code that makes its prompts, and the
``random`` kind (vLLM bench's ``random`` dataset: prompts of random token ids). It knows nothing of HTTP or
timing; the client turns a ``PlannedRequest`` into a request body.

Prompts are deterministic: request ``i`` of a workload is the same on every run, seeded by
``(workload.seed, i)`` alone, so it does not depend on how many requests are planned. Warm-up requests draw from
a separate stream, so a warm-up never sends a measured prompt (which would warm the prefix cache for it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from tokenizers import Tokenizer

from harness.errors import ConfigError
from harness.workloads import RandomWorkload, Workload

Api = Literal["completions", "chat"]
_LENGTH_ROUNDS = 10


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    """One request ready to send: what to ask and how long an answer to ask for."""

    index: int
    warmup: bool
    api: Api
    prompt: tuple[int, ...] | str
    """Token ids for the completions API (exact length); text for chat (one user message)."""
    input_tokens: int
    """Planned prompt length in tokens."""
    max_tokens: int
    temperature: float = 0.0
    ignore_eos: bool = True


PromptMaker = Callable[[Workload, int, Path | None, int, bool], list[PlannedRequest]]
"""(workload, count, tokenizer_dir, offset, warmup) -> requests offset .. offset+count-1."""


def make_requests(
    workload: Workload, count: int, tokenizer_dir: Path | None, *, offset: int = 0, warmup: bool = False
) -> list[PlannedRequest]:
    """Plan requests ``offset .. offset+count-1`` of a workload (the warm-up stream when ``warmup``)."""
    maker = PROMPT_MAKERS.get(workload.kind)
    if maker is None:
        raise ConfigError(
            "workload", "kind", f"no prompt maker for kind {workload.kind!r}",
            f"use one of: {', '.join(sorted(PROMPT_MAKERS))}",
        )
    return maker(workload, count, tokenizer_dir, offset, warmup)


@dataclass(frozen=True, slots=True)
class _Vocabulary:
    tokenizer: Tokenizer
    ordinary_ids: np.ndarray
    """Every id of the tokenizer that is neither special nor added (those would change the model's behaviour)."""


def _load_vocabulary(tokenizer_dir: Path | None) -> _Vocabulary:
    if tokenizer_dir is None:
        raise ConfigError(
            "model", "id", "random prompts need the model's tokenizer.json on disk; remote model ids are not "
            "supported yet", "point the model at a local directory (or a fixture model) that holds tokenizer.json",
        )
    file = Path(tokenizer_dir) / "tokenizer.json"
    if not file.is_file():
        raise ConfigError(str(tokenizer_dir), "tokenizer.json", "no tokenizer.json in the model directory",
                          "use a model directory saved with its tokenizer (save_pretrained)")
    tokenizer = Tokenizer.from_file(str(file))
    added = set(tokenizer.get_added_tokens_decoder())
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    ordinary = np.array([i for i in range(size) if i not in added and tokenizer.id_to_token(i) is not None])
    if ordinary.size == 0:
        raise ConfigError(str(file), "", "the tokenizer has no ordinary (non-special) tokens", "check the model")
    return _Vocabulary(tokenizer, ordinary)


def _length(rng: np.random.Generator, mean: int, range_ratio: float) -> int:
    """Uniform integer in [floor(L(1-r)), ceil(L(1+r))], at least 1 (vLLM's random dataset bounds)."""
    low = max(1, math.floor(mean * (1 - range_ratio)))
    high = max(low, math.ceil(mean * (1 + range_ratio)))
    return int(rng.integers(low, high + 1))


def _text_of_length(vocab: _Vocabulary, rng: np.random.Generator, ids: tuple[int, ...]) -> str:
    """Text that re-encodes to ``len(ids)`` tokens, as near as a few rounds get it (vLLM's random dataset does
    the same): decoding random ids and encoding the text again merges or splits tokens. The chat template still
    adds its own tokens; the server's ``usage.prompt_tokens`` is the truth for chat."""
    target, current = len(ids), list(ids)
    text = vocab.tokenizer.decode(current, skip_special_tokens=False)
    for _ in range(_LENGTH_ROUNDS):
        current = vocab.tokenizer.encode(text, add_special_tokens=False).ids
        if len(current) == target:
            break
        if len(current) > target:
            current = current[:target]
        else:
            extra = vocab.ordinary_ids[rng.integers(0, vocab.ordinary_ids.size, size=target - len(current))]
            current += [int(i) for i in extra]
        text = vocab.tokenizer.decode(current, skip_special_tokens=False)
    return text


def _random_requests(
    workload: Workload, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool
) -> list[PlannedRequest]:
    assert isinstance(workload, RandomWorkload)
    vocab = _load_vocabulary(tokenizer_dir)
    stream = 1 if warmup else 0
    planned = []
    for index in range(offset, offset + count):
        rng = np.random.default_rng((workload.seed, stream, index))
        input_len = _length(rng, workload.input_tokens, workload.range_ratio)
        output_len = _length(rng, workload.output_tokens, workload.range_ratio)
        ids = tuple(int(i) for i in vocab.ordinary_ids[rng.integers(0, vocab.ordinary_ids.size, size=input_len)])
        prompt: tuple[int, ...] | str = ids
        if workload.api == "chat":
            prompt = _text_of_length(vocab, rng, ids)
        planned.append(PlannedRequest(
            index=index, warmup=warmup, api=workload.api, prompt=prompt, input_tokens=input_len,
            max_tokens=output_len, temperature=workload.temperature, ignore_eos=workload.ignore_eos,
        ))
    return planned


PROMPT_MAKERS: Mapping[str, PromptMaker] = {
    "random": _random_requests,
}
