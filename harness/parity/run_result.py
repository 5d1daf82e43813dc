"""The result of one BFCL run (one server, one decoding) as data: per-item records and their summary, in JSON.

This module owns the record shapes, the summary of a run (accuracy per category, sections and overall with
BFCL's aggregation, malformed and no-call rates, TTFT/TPOT medians) and their files. It does not send requests
(``bfcl_run``) or compare runs (``comparison``).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from harness.parity.bfcl_data import IRRELEVANCE_CATEGORIES
from harness.parity.chat_stream import RequestErrorKind
from harness.parity.decoding import DecodeProblem
from harness.parity.scoring import aggregate
from harness.store import write_atomic
from harness.stored_files import load_or_set_aside

ItemErrorKind = RequestErrorKind | DecodeProblem | Literal["truncated"]
"""Why an item's answer is unusable or suspect: a request failure (no answer at all), a decode problem, or an
answer cut off at ``max_tokens`` (``finish_reason == "length"``, always counted wrong, as BFCL's notes advise)."""

REQUEST_ERRORS: frozenset[str] = frozenset(get_args(RequestErrorKind))


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ItemRecord(_Record):
    """One BFCL item's answer and verdict."""

    id: str
    category: str
    correct: bool
    malformed: bool = Field(description="tried to call, but the output could not be decoded")
    no_call: bool = Field(description="answered without any call")
    calls: tuple[dict[str, Any], ...] | None = Field(
        description="decoded calls in the checker's format [{name: {arg: value}}]; None when undecodable")
    error_kind: ItemErrorKind | None = None
    error: str | None = Field(None, description="the server's message, the decode problem, or BFCL's error_type")
    finish_reason: str | None = None
    output_tokens: int | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None

    @property
    def request_failed(self) -> bool:
        return self.error_kind in REQUEST_ERRORS


class CategoryScore(_Record):
    """Accuracy of one category in one run."""

    total: int
    correct: int
    accuracy: float = Field(description="fraction correct, 0..1")
    malformed: int
    no_call: int
    request_errors: int


class RunSettings(_Record):
    """The request settings every item of a run was sent with (what a run is asked to use, and records).

    ``extra_body`` is merged into every request, e.g. ``{"chat_template_kwargs": {"enable_thinking": False}}`` for
    hybrid-reasoning models; keep it identical across the runs you compare."""

    decoding: str = "free"
    max_tokens: int = Field(1024, gt=0)
    concurrency: int = Field(8, gt=0, description="requests in flight at once")
    temperature: float = 0.0
    seed: int = 0
    timeout_s: float = Field(120.0, gt=0, description="per request")
    extra_body: dict[str, Any] = Field(default_factory=dict)


class ParityRun(_Record):
    """One server measured on BFCL under one decoding; ``error`` names the cause when the run could not be done."""

    model: str
    base_url: str
    decoding: str
    bfcl_version: str
    settings: RunSettings
    started_at: str
    wall_s: float
    error: str | None = None
    error_kind: ItemErrorKind | None = None
    skipped_categories: tuple[str, ...] = Field((), description="categories the decoding cannot serve")
    overall_accuracy: float | None = Field(description="BFCL-aggregated accuracy (fraction) over the run's sections")
    sections: dict[str, float]
    categories: dict[str, CategoryScore]
    malformed_rate: float | None = Field(description="items whose attempted calls could not be decoded / items")
    no_call_rate: float | None = Field(description="call-expecting items answered without a call / such items")
    request_error_rate: float | None
    error_counts: dict[str, int] = Field(description="items per error kind, e.g. how many schemas the grammar "
                                                     "backend rejected")
    ttft_median_ms: float | None
    tpot_median_ms: float | None
    items: tuple[ItemRecord, ...]


def score_categories(items: Sequence[ItemRecord]) -> dict[str, CategoryScore]:
    """Per-category counts and accuracy, in the order categories first appear."""
    groups: dict[str, list[ItemRecord]] = {}
    for item in items:
        groups.setdefault(item.category, []).append(item)
    return {category: CategoryScore(total=len(group), correct=sum(i.correct for i in group),
                                    accuracy=sum(i.correct for i in group) / len(group),
                                    malformed=sum(i.malformed for i in group), no_call=sum(i.no_call for i in group),
                                    request_errors=sum(i.request_failed for i in group))
            for category, group in groups.items()}


def summarize_run(items: Sequence[ItemRecord], **fields: Any) -> ParityRun:
    """A ``ParityRun`` of ``items`` with every summary figure computed from them; ``fields`` are the rest."""
    categories = score_categories(items)
    combined = aggregate({c: s.accuracy for c, s in categories.items()},
                         {c: s.total for c, s in categories.items()})
    expecting = [i for i in items if i.category not in IRRELEVANCE_CATEGORIES]
    return ParityRun(
        overall_accuracy=combined.overall, sections=dict(combined.sections), categories=categories,
        malformed_rate=_rate(sum(i.malformed for i in items), len(items)),
        no_call_rate=_rate(sum(i.no_call for i in expecting), len(expecting)),
        request_error_rate=_rate(sum(i.request_failed for i in items), len(items)),
        error_counts=dict(Counter(i.error_kind for i in items if i.error_kind is not None).most_common()),
        ttft_median_ms=_median([i.ttft_ms for i in items]), tpot_median_ms=_median([i.tpot_ms for i in items]),
        items=tuple(items), **fields,
    )


def run_failure(items: Sequence[ItemRecord]) -> tuple[str, ItemErrorKind] | None:
    """The run-level cause when no item got an answer from the model: the most common request failure."""
    if not items or not all(i.request_failed for i in items):
        return None
    kind, count = Counter(i.error_kind for i in items).most_common(1)[0]
    assert kind is not None
    example = next(i for i in items if i.error_kind == kind)
    return f"every request failed; {count}/{len(items)}: {example.error}", kind


def write_run(run: ParityRun, path: Path) -> None:
    """Write ``run`` as JSON, atomically."""
    write_atomic(path, run.model_dump_json(indent=1))


def read_run(path: Path) -> ParityRun:
    """Read a run written by ``write_run``."""
    return ParityRun.model_validate_json(path.read_text())


def stored_run(path: Path) -> ParityRun | None:
    """The run the store kept at ``path``; None when there is none, or it is damaged (set aside: the next run asks
    those items again) or from an incompatible version."""
    return load_or_set_aside(path, ParityRun.model_validate_json)


def _rate(count: int, total: int) -> float | None:
    return count / total if total else None


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None
