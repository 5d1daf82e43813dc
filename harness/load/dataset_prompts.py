"""The ``dataset`` workload's prompts: ShareGPT-style conversations read with ``datasets``.

A row holds a conversation, as ShareGPT's ``conversations: [{"from": "human", "value": ...}, {"from": "gpt",
"value": ...}, ...]`` or OpenAI-style ``messages: [{"role", "content"}]``. The first user turn is the prompt and the
first assistant turn's length (in the served model's tokens) is the output length, unless the workload fixes one;
rows without both, and rows whose prompt exceeds ``max_input_tokens``, are skipped (as vLLM's sharegpt loader
does). Rows are taken in a seeded order and reused cyclically when a cell needs more requests than the file has.

Sources: a local ``.json`` / ``.jsonl`` / ``.parquet`` file, or a hub dataset id (only when the machine is online).
Anything unreadable is a ConfigError that names the source and what to do, raised before any request is sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from harness.config.workloads import DatasetWorkload
from harness.errors import ConfigError
from harness.load.prompts import PlannedRequest, WorkloadKind
from harness.load.vocabulary import Vocabulary, load_vocabulary

LOCAL_FORMATS = {".json": "json", ".jsonl": "json", ".parquet": "parquet"}
_USER = {"human", "user"}
_ASSISTANT = {"gpt", "assistant", "chatgpt", "model"}


@dataclass(frozen=True, slots=True)
class Conversation:
    prompt: str
    reply: str


def _turns(row: dict[str, Any]) -> list[tuple[str, str]]:
    turns = row.get("conversations") or row.get("messages") or []
    pairs = []
    for turn in turns if isinstance(turns, list) else []:
        if isinstance(turn, dict):
            speaker = str(turn.get("from") or turn.get("role") or "").lower()
            text = turn.get("value") if "value" in turn else turn.get("content")
            if isinstance(text, str):
                pairs.append((speaker, text))
    return pairs


def conversation_of(row: dict[str, Any]) -> Conversation | None:
    """The first user turn and the assistant reply after it; None when the row has no such pair."""
    turns = _turns(row)
    for i, (speaker, text) in enumerate(turns[:-1]):
        if speaker in _USER and text.strip():
            reply = next((t for s, t in turns[i + 1:] if s in _ASSISTANT), "")
            return Conversation(text, reply) if reply.strip() else None
    return None


def _read_rows(source: str, split: str) -> list[dict[str, Any]]:
    try:
        import datasets
    except ImportError as exc:
        raise ConfigError(source, "path", "the dataset workload needs the 'datasets' package",
                          "pip install datasets pyarrow (make setup installs them)") from exc
    path = Path(source).expanduser()
    local = path.suffix in LOCAL_FORMATS or path.exists() or source.startswith((".", "/", "~"))
    try:
        if local:
            if not path.is_file():
                raise ConfigError(source, "path", "no such file",
                                  "give a local .json/.jsonl/.parquet file, or a hub dataset id such as org/name")
            if path.suffix not in LOCAL_FORMATS:
                raise ConfigError(source, "path", f"unsupported file type {path.suffix!r}",
                                  f"use one of {', '.join(LOCAL_FORMATS)}")
            loaded = datasets.load_dataset(LOCAL_FORMATS[path.suffix], data_files=str(path), split="train")
        else:
            loaded = datasets.load_dataset(source, split=split)
    except ConfigError:
        raise
    # datasets and huggingface_hub raise many types for "not reachable" (offline, unknown id, HTTP errors, bad
    # JSON); every one of them means the same to a user: this source cannot be read now.
    except Exception as exc:  # noqa: BLE001
        where = "the file" if local else "the hub (is this machine online? is the id right?)"
        raise ConfigError(source, "path", f"cannot load the dataset from {where}: {type(exc).__name__}: {exc}",
                          "use a local .json/.jsonl/.parquet copy, or check the id and the network") from exc
    return [dict(row) for row in loaded]


@lru_cache(maxsize=4)
def _conversations(source: str, split: str) -> tuple[Conversation, ...]:
    found = tuple(c for row in _read_rows(source, split) if (c := conversation_of(row)) is not None)
    if not found:
        raise ConfigError(source, "path", "no row holds a user turn followed by an assistant turn",
                          "use ShareGPT 'conversations' (from/value) or 'messages' (role/content) rows")
    return found


def _lengths(vocab: Vocabulary | None, texts: list[str]) -> list[int]:
    """Token counts (word counts without a tokenizer: only when no length decides anything)."""
    if vocab is None:
        return [len(text.split()) for text in texts]
    return [len(e.ids) for e in vocab.tokenizer.encode_batch(texts, add_special_tokens=False)]


@lru_cache(maxsize=4)
def _prompt_lengths(source: str, split: str, tokenizer_dir: Path | None) -> tuple[int, ...]:
    vocab = load_vocabulary(tokenizer_dir) if tokenizer_dir is not None else None
    return tuple(_lengths(vocab, [c.prompt for c in _conversations(source, split)]))


def dataset_requests(
    workload: DatasetWorkload, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool
) -> list[PlannedRequest]:
    conversations = _conversations(workload.path, workload.split)
    needs_tokens = workload.output_tokens is None or workload.max_input_tokens is not None
    vocab = load_vocabulary(tokenizer_dir) if needs_tokens or tokenizer_dir is not None else None
    order = np.random.default_rng((workload.seed, 1 if warmup else 0)).permutation(len(conversations))
    prompt_lengths = _prompt_lengths(workload.path, workload.split, tokenizer_dir if vocab is not None else None)
    if workload.max_input_tokens is not None:
        order = order[[prompt_lengths[i] <= workload.max_input_tokens for i in order]]
        if order.size == 0:
            raise ConfigError(workload.path, "max_input_tokens", f"every prompt is longer than "
                              f"{workload.max_input_tokens} tokens", "raise max_input_tokens")
    picked = [int(order[index % order.size]) for index in range(offset, offset + count)]
    replies = ([workload.output_tokens] * count if workload.output_tokens is not None
               else _lengths(vocab, [conversations[i].reply for i in picked]))
    return [
        PlannedRequest(
            index=index, warmup=warmup, api=workload.api, prompt=conversations[row].prompt,
            input_tokens=prompt_lengths[row], max_tokens=max(1, int(reply)),
            temperature=workload.temperature, ignore_eos=workload.ignore_eos,
        )
        for index, row, reply in zip(range(offset, offset + count), picked, replies, strict=True)
    ]


class DatasetKind(WorkloadKind[DatasetWorkload]):
    """Independent requests, one conversation's first turn each; ``datasets`` is imported only when one is read."""

    name = "dataset"
    model = DatasetWorkload

    def requests(self, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool) -> list[PlannedRequest]:
        return dataset_requests(self.workload, count, tokenizer_dir, offset, warmup)
