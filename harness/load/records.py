"""One measured request, as data: what was sent, when every token-carrying chunk arrived, and how it failed.

This module owns the record and its JSON-lines form; it computes per-request latencies (TTFT, TPOT, ITL,
E2EL) from the raw timestamps but no aggregate statistics (that is ``harness.metrics.cell_summary``). A failed
request is a record with ``error`` set, never an exception.

Timing conventions (all seconds, from ``time.perf_counter()``):

- ``send_time`` and ``end_time`` are relative to the start of the load run, so records of one run share a clock;
- ``chunk_times`` are relative to ``send_time``, one entry per streamed chunk that carried at least one token,
  and ``chunk_tokens`` says how many tokens each of those chunks carried (more than one under speculative
  decoding).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any, BinaryIO, Literal

from harness.atomic_write import write_atomically
from harness.errors import DamagedFile, StoredFileError

ErrorKind = Literal["http_status", "timeout", "connection", "stream", "empty", "not_sent"]
"""Why a request failed:

- ``http_status``: the server answered with a non-200 status (``status_code`` holds it);
- ``timeout``: the request ran past its per-request time limit;
- ``connection``: no response at all (connection refused, reset or closed before the response headers);
- ``stream``: the response started but broke (connection lost, malformed SSE, an error event, no ``[DONE]``);
- ``empty``: the stream completed without a single token;
- ``not_sent``: the runner gave up on a dead server and never sent it.
"""


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """Why a request failed; ``message`` is for people, ``kind`` for counting."""

    kind: ErrorKind
    message: str
    status_code: int | None = None


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """Everything measured about one request; derived latencies are properties, not stored."""

    index: int
    """Prompt index in its phase (warm-up and measured prompts are numbered, and drawn, separately)."""
    warmup: bool
    """True for warm-up requests, which every statistic excludes."""
    input_tokens: int
    """Prompt length as planned (exact for token-id prompts; chat templates add to what the server sees)."""
    max_tokens: int
    send_time: float
    """Seconds from the run's start to the moment the request was sent."""
    end_time: float
    """Seconds from the run's start to the moment the response was fully read or the request failed."""
    chunk_times: tuple[float, ...] = ()
    """Arrival of each token-carrying chunk, seconds after ``send_time``."""
    chunk_tokens: tuple[int, ...] = ()
    """Tokens carried by each chunk of ``chunk_times``."""
    output_tokens: int = 0
    """Tokens generated: the final ``usage.completion_tokens``, else the sum of ``chunk_tokens``."""
    prompt_tokens: int | None = None
    """Prompt tokens as the server counted them (``usage.prompt_tokens``), when it said."""
    error: ErrorInfo | None = None
    repeat: int = 0
    """Which repeat of its cell this request belongs to (cells run ``repeats`` times; 0 is the first)."""
    cached_tokens: int | None = None
    """Prompt tokens the server served from its prefix cache (``usage.prompt_tokens_details.cached_tokens``),
    when it said."""
    session: int | None = None
    """The agent session this request is a turn of (None outside agent workloads)."""
    turn: int | None = None
    """The turn's index in its session, 0 first."""
    due_time: float | None = None
    """When an open-loop schedule (a request rate's seeded arrivals, a trace's own timing) meant to send it, seconds
    from the run's start; ``send_time`` is when it was sent, after any wait for a concurrency slot. None in a
    closed loop, where nothing is due."""
    spec_histogram: tuple[int, ...] | None = None
    """Speculative decoding as the server reported it for this request (vLLM's per-request metrics): entry j counts
    the verify steps that accepted exactly j draft tokens; None where the server said nothing."""

    @property
    def steps_acceptance_length(self) -> float | None:
        """Tokens per decode step from the stream's structure: tokens after the first chunk / chunks after it.

        One chunk is one engine step while the client keeps up (vLLM's output collector merges steps only when a
        consumer lags), so with speculation this is 1 + accepted drafts per step, and 1.0 without it."""
        if len(self.chunk_tokens) < 2:
            return None
        return sum(self.chunk_tokens[1:]) / (len(self.chunk_tokens) - 1)

    @property
    def server_acceptance_length(self) -> float | None:
        """1 + accepted draft tokens per verify step, from the server's per-request histogram."""
        steps = sum(self.spec_histogram or ())
        if not steps:
            return None
        assert self.spec_histogram is not None
        return 1.0 + sum(j * n for j, n in enumerate(self.spec_histogram)) / steps

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def ttft(self) -> float | None:
        """Time to first token (s): send to the first token-carrying chunk."""
        return self.chunk_times[0] if self.chunk_times else None

    @property
    def e2el(self) -> float | None:
        """End-to-end latency (s): send to the last token-carrying chunk.

        As vLLM bench serve's ``latency``: the trailing usage chunk and ``[DONE]`` carry no token and are left
        out, so that ``e2el - ttft == sum(itl)`` exactly.
        """
        return self.chunk_times[-1] if self.chunk_times else None

    @property
    def tpot(self) -> float | None:
        """Time per output token (s), first token excluded: (E2EL - TTFT) / (output_tokens - 1)."""
        if self.output_tokens < 2 or not self.chunk_times:
            return None
        return (self.chunk_times[-1] - self.chunk_times[0]) / (self.output_tokens - 1)

    @property
    def itl(self) -> tuple[float, ...]:
        """Inter-token latencies (s): the gaps between consecutive token-carrying chunks.

        vLLM bench serve's convention: one gap per chunk after the first, whatever the number of tokens the
        chunk carries. A chunk of n tokens (speculative decoding) gives one gap, not n gaps of 1/n: ITL is the
        latency a reader sees between updates (one engine step), while TPOT is the per-token cost.
        """
        times = self.chunk_times
        return tuple(later - earlier for earlier, later in pairwise(times))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestRecord:
        error = data.get("error")
        return cls(
            index=int(data["index"]),
            warmup=bool(data["warmup"]),
            input_tokens=int(data["input_tokens"]),
            max_tokens=int(data["max_tokens"]),
            send_time=float(data["send_time"]),
            end_time=float(data["end_time"]),
            chunk_times=tuple(float(t) for t in data.get("chunk_times", ())),
            chunk_tokens=tuple(int(n) for n in data.get("chunk_tokens", ())),
            output_tokens=int(data.get("output_tokens", 0)),
            prompt_tokens=None if data.get("prompt_tokens") is None else int(data["prompt_tokens"]),
            error=None if error is None else ErrorInfo(**error),
            repeat=int(data.get("repeat", 0)),
            cached_tokens=_optional_int(data.get("cached_tokens")),
            session=_optional_int(data.get("session")),
            turn=_optional_int(data.get("turn")),
            due_time=None if data.get("due_time") is None else float(data["due_time"]),
            spec_histogram=None if data.get("spec_histogram") is None
            else tuple(int(n) for n in data["spec_histogram"]),
        )


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def write_jsonl(path: Path, records: Iterable[RequestRecord]) -> None:
    """Write one JSON object per line; atomically (``harness.atomic_write``), so a crash never leaves half a file
    behind. The lines are streamed to the file as ``records`` yields them."""

    def write(out: BinaryIO) -> None:
        for record in records:
            out.write((json.dumps(record.to_dict(), separators=(",", ":")) + "\n").encode())

    write_atomically(Path(path), write)


def read_jsonl(path: Path) -> list[RequestRecord]:
    """The records stored at ``path``. Damaged content (cut short, bytes flipped, a line of another shape, a
    directory in its place) raises ``DamagedFile``, an unreadable file ``StoredFileError``: both name the file and
    the fix, never a bare traceback (``FileNotFoundError`` stays itself: absent is not damaged)."""
    path = Path(path)
    number = 0
    try:
        with path.open(encoding="utf-8") as lines:
            found = []
            for number, line in enumerate(lines, 1):  # noqa: B007  (the number names the damaged line)
                if line.strip():
                    found.append(RequestRecord.from_dict(json.loads(line)))
            return found
    except FileNotFoundError:
        raise
    except IsADirectoryError as exc:
        raise _damaged(path, "a directory where the harness wrote a file") from exc
    except OSError as exc:
        raise StoredFileError(f"{path}: cannot be read ({exc.strerror or exc})\n  fix: give yourself access "
                              f"(chmod u+rw {path}), or move it aside so that `harness run` redoes its cell") from exc
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # JSON and Unicode errors are ValueErrors
        raise _damaged(path, f"near line {max(number, 1)}: {type(exc).__name__}: {str(exc)[:200]}") from exc


def _damaged(path: Path, why: str) -> DamagedFile:
    return DamagedFile(f"{path}: damaged ({why})\n  fix: move it aside (mv {path} {path}.damaged); "
                       "`harness run MATRIX` then redoes its cell (`harness report` and `harness run` set it aside "
                       "themselves)")
