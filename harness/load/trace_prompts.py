"""The ``trace`` workload: a Mooncake-format trace replayed at its own timing, with shared blocks really shared.

The format (one JSON object per line, as Mooncake's published traces and SGLang's and AIPerf's replayers read it)::

    {"timestamp": 0, "input_length": 1500, "output_length": 40, "hash_ids": [0, 1, 2]}

``timestamp`` is milliseconds since the trace began (non-decreasing), ``input_length`` and ``output_length`` are
tokens, and ``hash_ids`` name the prompt's consecutive ``block_tokens``-token blocks (512 in Mooncake): two
requests naming the same id share that block's tokens, which is what makes a prefix cache hit. Here block ``h``
is ``block_tokens`` random ids of the served model's vocabulary seeded by ``(seed, prompt block, h)``, the prompt
is its blocks in order cut to ``input_length`` (and padded with tokens of its own where the ids cover less), and
the request is due ``timestamp * time_scale / 1000`` seconds into the measured phase. Another cell on the same
server (another prompt block) gets blocks of its own, so it never starts with a warm cache; the warm-up sends
prompts no entry shares.

The whole file is read and checked the first time a cell plans from it (before any server launches): a missing
field, a wrong type, or a timestamp that goes back is a ConfigError naming the file, the line and the fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from harness.config.workloads import TraceWorkload
from harness.errors import ConfigError
from harness.load.prompts import PROMPT_BLOCK, PlannedRequest, WorkloadKind
from harness.load.vocabulary import Vocabulary, load_vocabulary

_BLOCK_STREAM = 6
_OWN_STREAM = 7
_FIX = "each line is {\"timestamp\": ms, \"input_length\": n, \"output_length\": n, \"hash_ids\": [ids]} " \
       "(Mooncake's format, README: Trace replay)"


@dataclass(frozen=True, slots=True)
class TraceEntry:
    timestamp_ms: float
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]


def _entry(source: str, number: int, line: str, previous: float) -> TraceEntry:
    where = f"line {number}"
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ConfigError(source, where, f"not JSON: {exc}", _FIX) from exc
    if not isinstance(data, dict):
        raise ConfigError(source, where, "not a JSON object", _FIX)
    missing = [k for k in ("timestamp", "input_length", "output_length", "hash_ids") if k not in data]
    if missing:
        raise ConfigError(source, where, f"missing {', '.join(missing)}", _FIX)
    stamp, hashes = data["timestamp"], data["hash_ids"]
    if not isinstance(stamp, int | float) or isinstance(stamp, bool) or stamp < 0:
        raise ConfigError(source, f"{where}: timestamp", f"{stamp!r} is not a time in ms", _FIX)
    if stamp < previous:
        raise ConfigError(source, f"{where}: timestamp", f"{stamp} comes before the previous line's {previous:g}: "
                          "timestamps must not go back", "sort the trace by timestamp")
    for key in ("input_length", "output_length"):
        value = data[key]
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ConfigError(source, f"{where}: {key}", f"{value!r} is not a positive token count", _FIX)
    if not isinstance(hashes, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in hashes):
        raise ConfigError(source, f"{where}: hash_ids", "not a list of integers", _FIX)
    return TraceEntry(float(stamp), data["input_length"], data["output_length"], tuple(hashes))


@lru_cache(maxsize=8)
def _read(path: str, mtime_ns: int) -> tuple[TraceEntry, ...]:
    entries: list[TraceEntry] = []
    previous = 0.0
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                entries.append(_entry(path, number, line, previous))
                previous = entries[-1].timestamp_ms
    if not entries:
        raise ConfigError(path, "", "the trace holds no entries", _FIX)
    return tuple(entries)


def read_trace(path: str) -> tuple[TraceEntry, ...]:
    """Every entry of a trace file, checked; cached until the file changes."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(path, "path", "no such trace file",
                          "point workloads.<name>.path at a JSONL trace (matrices/data/agent-trace.jsonl is one)")
    return _read(str(file), file.stat().st_mtime_ns)


def _prompt(vocab: Vocabulary, workload: TraceWorkload, entry: TraceEntry, key: tuple[int, ...], index: int,
            blocks: dict[tuple[int, ...], tuple[int, ...]]) -> tuple[int, ...]:
    ids: list[int] = []
    for h in entry.hash_ids:
        if len(ids) >= entry.input_length:
            break
        block = blocks.get((*key, h))
        if block is None:
            block = vocab.random_ids(np.random.default_rng((workload.seed, _BLOCK_STREAM, *key, h % 2**64)),
                                     workload.block_tokens)
            blocks[(*key, h)] = block
        ids.extend(block)
    if len(ids) < entry.input_length:  # the ids cover less than the prompt: the rest is this request's own
        rest = np.random.default_rng((workload.seed, _OWN_STREAM, *key, index))
        ids.extend(vocab.random_ids(rest, entry.input_length - len(ids)))
    return tuple(ids[:entry.input_length])


def trace_requests(
    workload: TraceWorkload, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool
) -> list[PlannedRequest]:
    """Entries ``offset mod PROMPT_BLOCK ..`` of the trace, due at their scaled timestamps (relative to the trace's
    first entry); fewer than ``count`` where the trace or ``num_requests`` ends first."""
    entries = read_trace(workload.path)[:workload.num_requests]
    vocab = load_vocabulary(tokenizer_dir)
    first = offset % PROMPT_BLOCK
    chosen = entries[first:first + count]
    start_ms = entries[0].timestamp_ms
    blocks: dict[tuple[int, ...], tuple[int, ...]] = {}
    key = (1 if warmup else 0, offset // PROMPT_BLOCK)
    planned = []
    for i, entry in enumerate(chosen):
        index = offset + i
        output = min(entry.output_length, workload.max_output_tokens or entry.output_length)
        if warmup:  # a warm-up shares no block with the replay: its own tokens at the entry's length
            prompt = vocab.random_ids(np.random.default_rng((workload.seed, _OWN_STREAM, *key, index)),
                                      entry.input_length)
        else:
            prompt = _prompt(vocab, workload, entry, key, index, blocks)
        planned.append(PlannedRequest(
            index=index, warmup=warmup, api="completions", prompt=prompt, input_tokens=entry.input_length,
            max_tokens=output, temperature=workload.temperature, ignore_eos=workload.ignore_eos,
            due_s=None if warmup else (entry.timestamp_ms - start_ms) * workload.time_scale / 1000.0,
        ))
    return planned


class TraceKind(WorkloadKind[TraceWorkload]):
    """Requests at the trace's own timing: its due times pace the measured phase, whatever the load pattern says,
    and the report shows how late each was sent."""

    name = "trace"
    model = TraceWorkload
    own_timing = True
    report_shape = "replay"

    def requests(self, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool) -> list[PlannedRequest]:
        return trace_requests(self.workload, count, tokenizer_dir, offset, warmup)

    def plan_bound(self, count: int) -> str:
        return f"at most {count} trace entries at the trace's timing"
