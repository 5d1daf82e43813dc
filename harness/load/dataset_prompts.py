"""The ``dataset`` workload's prompts: ShareGPT-style conversations read with ``datasets``.

A row holds a conversation, as ShareGPT's ``conversations: [{"from": "human", "value": ...}, {"from": "gpt",
"value": ...}, ...]`` or OpenAI-style ``messages: [{"role", "content"}]``. The first user turn is the prompt and the
first assistant turn's length (in the served model's tokens) is the output length, unless the workload fixes one;
rows without both, and rows whose prompt exceeds ``max_input_tokens``, are skipped (as vLLM's sharegpt loader
does). Rows are taken in a seeded order and reused cyclically when a cell needs more requests than the file has.

Sources: a local ``.json`` / ``.jsonl`` / ``.parquet`` file, a hub dataset id (only when the machine is online), or
``bfcl:<category>``: the user requests of one BFCL category as the installed ``bfcl-eval`` wheel ships them (e.g.
``bfcl:live_irrelevance``, real requests users contributed). Those rows hold no reply, so the workload must fix
``output_tokens`` (the config refuses it otherwise); they are read with the stdlib, without ``datasets``, and go
through the same seeded order, ``max_input_tokens`` filter and cyclic reuse as any other source.
Anything unreadable is a ConfigError that names the source and what to do, raised before any request is sent.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from harness.bfcl.package import INSTALL_HINT
from harness.config.workloads import DatasetWorkload
from harness.errors import ConfigError
from harness.load.prompts import PlannedRequest, WorkloadKind
from harness.load.vocabulary import Vocabulary, load_vocabulary

LOCAL_FORMATS = {".json": "json", ".jsonl": "json", ".parquet": "parquet"}
_USER = {"human", "user"}
_ASSISTANT = {"gpt", "assistant", "chatgpt", "model"}
BFCL_FILE_PREFIX = "BFCL_v4_"
"""How the wheel names a category's questions: ``data/BFCL_v4_<category>.json`` (the data version BFCL_VERSION has)."""


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


def _bfcl_data_dir() -> Path | None:
    """The wheel's ``data`` folder, found without importing ``bfcl_eval`` (its top level pulls in vendor SDKs)."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _bfcl_prompt(row: dict[str, Any]) -> str | None:
    """The first user turn of the row's first turn list (``question`` holds one list of messages per turn)."""
    question = row.get("question")
    first = question[0] if isinstance(question, list) and question else None
    for message in first if isinstance(first, list) else []:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) and content.strip() else None
    return None


def _bfcl_conversations(source: str) -> tuple[Conversation, ...]:
    category = source.removeprefix(DatasetWorkload.BFCL_PREFIX)
    data = _bfcl_data_dir()
    if data is None or not data.is_dir():
        raise ConfigError(source, "path", "a bfcl: source reads the prompts the bfcl-eval wheel ships, and it is not "
                          "installed (or has no data folder)", INSTALL_HINT)
    available = sorted(p.name.removeprefix(BFCL_FILE_PREFIX).removesuffix(".json")
                       for p in data.glob(f"{BFCL_FILE_PREFIX}*.json"))
    file = data / f"{BFCL_FILE_PREFIX}{category}.json"
    # Checked against the listing, not file.exists(), so that a category such as "../x" cannot name another file.
    if category not in available:
        raise ConfigError(source, "path", f"bfcl-eval has no category {category!r} (no {file.name} in {data})",
                          "use one of: " + ", ".join(f"bfcl:{name}" for name in available))
    try:
        rows = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(source, "path", f"cannot read {file} as JSON lines: {type(exc).__name__}: {exc}",
                          "pick a category whose file holds one question per line") from exc
    found = tuple(Conversation(prompt, reply="") for row in rows
                  if isinstance(row, dict) and (prompt := _bfcl_prompt(row)) is not None)
    if not found:
        raise ConfigError(source, "path", f"no row of {file.name} holds a user question",
                          "pick a category whose rows have question: [[{role: user, content}]]")
    return found


@lru_cache(maxsize=4)
def _conversations(source: str, split: str) -> tuple[Conversation, ...]:
    if source.startswith(DatasetWorkload.BFCL_PREFIX):
        return _bfcl_conversations(source)
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
