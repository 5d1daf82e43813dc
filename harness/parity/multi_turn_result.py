"""The record of a BFCL multi-turn run: one entry per conversation, per-category scores, BFCL's aggregate, and the
file it is stored in. Written by ``multi_turn_run``; read by the parity verdict and the report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.bfcl.package import bfcl_aggregation
from harness.parity.run_result import REQUEST_ERRORS, ItemRecord, ParityRun, RunSettings, summarize_run
from harness.store import write_atomic

MULTI_TURN = "multi_turn"
"""The key a multi-turn run goes by beside the single-turn decodings (in the store and the cell's verdict)."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MultiTurnRecord(_Record):
    """One multi-turn entry's conversation, what it cost, and BFCL's verdict."""

    id: str
    category: str
    correct: bool
    turns: int = Field(description="turns run; fewer than the entry has after a force-quit or a failed request")
    calls: tuple[tuple[tuple[str, ...], ...], ...] = Field(
        description="per turn, per executing step, the call strings BFCL executed and its checker judged")
    error_kind: str | None = Field(None, description="BFCL's error_type (e.g. multi_turn:instance_state_mismatch, "
                                                     "multi_turn:force_terminated), checker_error:<exception>, or "
                                                     "the kind of the request failure that ended the entry")
    error: str | None = Field(None, description="BFCL's error message, or what the request failure means")
    requests: int
    decode_failures: int = Field(description="replies whose tool calls BFCL could not decode; each ended a turn")
    truncated: int = Field(description="replies stopped at max_tokens")
    output_tokens: int
    prompt_tokens: int | None = Field(description="summed over the requests, as the server counted them")
    model_s: float = Field(description="summed send-to-end time of the entry's requests")

    @property
    def request_failed(self) -> bool:
        return self.error_kind in REQUEST_ERRORS


class MultiTurnScore(_Record):
    """Accuracy of one multi-turn category in one run."""

    total: int
    correct: int
    accuracy: float = Field(description="fraction correct, 0..1")
    force_terminated: int
    request_errors: int


class MultiTurnRun(_Record):
    """One server measured on BFCL multi-turn; ``error`` names the cause when the run could not be done."""

    model: str
    base_url: str
    bfcl_version: str
    settings: RunSettings
    max_steps: int
    started_at: str
    wall_s: float
    error: str | None = None
    error_kind: str | None = None
    accuracy: float | None = Field(description="BFCL's multi-turn score: unweighted mean of the categories run")
    categories: dict[str, MultiTurnScore]
    error_counts: dict[str, int]
    entries: tuple[MultiTurnRecord, ...]


def summarize_multi_turn(records: Sequence[MultiTurnRecord], *, stop: MultiTurnRecord | None,
                         **fields: Any) -> MultiTurnRun:
    """A ``MultiTurnRun`` of ``records`` with its scores; ``stop`` is the entry whose refusal stopped the run."""
    groups: dict[str, list[MultiTurnRecord]] = {}
    for record in records:
        groups.setdefault(record.category, []).append(record)
    categories = {c: MultiTurnScore(total=len(g), correct=sum(r.correct for r in g),
                                    accuracy=sum(r.correct for r in g) / len(g),
                                    force_terminated=sum(r.error_kind == "multi_turn:force_terminated" for r in g),
                                    request_errors=sum(r.request_failed for r in g))
                  for c, g in groups.items()}
    accuracy = None
    if categories:
        scores = [{"accuracy": s.accuracy, "total_count": s.total, "display_accuracy": s.accuracy}
                  for s in categories.values()]
        accuracy = float(bfcl_aggregation().unweighted(scores, display_na_if_category_missing=False)["accuracy"])
    error, error_kind = None, None
    if stop is not None:
        error, error_kind = stop.error, stop.error_kind
    elif not records:
        error = "no BFCL multi-turn entries to run"
    elif all(r.request_failed for r in records):
        error_kind, count = Counter(r.error_kind for r in records).most_common(1)[0]
        example = next(r for r in records if r.error_kind == error_kind)
        error = f"every entry ended in a failed request; {count}/{len(records)}: {example.error}"
    return MultiTurnRun(accuracy=accuracy, categories=categories, error=error, error_kind=error_kind,
                        error_counts=dict(Counter(r.error_kind for r in records if r.error_kind).most_common()),
                        entries=tuple(records), **fields)


def write_multi_turn_run(run: MultiTurnRun, path: Path) -> None:
    """Write ``run`` as JSON, atomically."""
    write_atomic(path, run.model_dump_json(indent=1))


def read_multi_turn_run(path: Path) -> MultiTurnRun:
    """Read a run written by ``write_multi_turn_run``."""
    return MultiTurnRun.model_validate_json(path.read_text())



def as_parity_run(run: MultiTurnRun) -> ParityRun:
    """The run in the single-turn record shape, one item per entry, so that the paired comparison (flips, McNemar,
    bootstrap) and the gate judge multi-turn exactly as they judge single-turn; ``decoding`` is ``multi_turn``."""
    items = [ItemRecord(id=e.id, category=e.category, correct=e.correct, malformed=e.decode_failures > 0,
                        no_call=False, calls=None, error=e.error or e.error_kind,
                        error_kind=e.error_kind if e.error_kind in REQUEST_ERRORS else None,
                        output_tokens=e.output_tokens)
             for e in run.entries]
    return summarize_run(items, model=run.model, base_url=run.base_url, decoding=MULTI_TURN,
                         bfcl_version=run.bfcl_version, settings=run.settings, started_at=run.started_at,
                         wall_s=run.wall_s, error=run.error,
                         error_kind=run.error_kind if run.error_kind in REQUEST_ERRORS else None)
