"""What one load run is asked (``LoadSpec``: where to send, what, how fast) and what it hands back (``LoadResult``:
the records, the measured phase's wall time, how busy the client was).

The scheduler that turns one into the other is ``harness.load.runner``; both are plain frozen records, so a run can
be described, logged and compared without running it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.config.load import LoadPattern
from harness.config.workloads import WorkloadBase
from harness.load.cpu_watch import ClientLoad
from harness.load.records import RequestRecord


@dataclass(frozen=True, slots=True)
class LoadSpec:
    """Everything one load run needs: where to send, what to send, how fast."""

    base_url: str
    """Server root, e.g. ``http://127.0.0.1:8123`` (the client appends ``/v1/...``)."""
    model: str
    """The served model name to put in requests."""
    workload: WorkloadBase
    concurrency: int
    """Users in fixed-concurrency mode; the cap on requests in flight in rate mode."""
    tokenizer_dir: Path | None
    """Directory holding the model's ``tokenizer.json`` (prompts are made of this vocabulary)."""
    request_timeout_s: float = 300.0
    abort_after_connection_errors: int = 8
    """Stop sending after this many consecutive refused connections (the server is gone); 0 never stops."""
    prompt_offset: int = 0
    """First measured prompt index. Cells on one server that share a workload send the same prompts unless
    this differs, and an engine's prefix cache then serves later cells' prefills from cache."""
    pattern: LoadPattern = field(default_factory=LoadPattern)
    warmup: bool = True
    """Send the workload's warm-up requests first (repeats after the first skip them)."""
    repeat: int = 0
    """Stamped on every record: which repeat of the cell this run is."""
    progress: bool | None = None
    """A live progress line; None: on an interactive terminal outside CI."""
    label: str = "load"
    """What the progress line calls this run (the cell's label)."""


@dataclass(frozen=True, slots=True)
class LoadResult:
    records: tuple[RequestRecord, ...]
    """Warm-up records first (flagged ``warmup=True``), then measured records, each phase in index order."""
    duration_s: float
    """Wall time of the measured phase: first measured send to last measured finish (0 if nothing was sent)."""
    client: ClientLoad | None = None
    """How busy the client was during the measured phase."""


def measured_duration(records: Sequence[RequestRecord]) -> float:
    """``LoadResult.duration_s`` of a measured phase's records: first send to last finish of the requests that were
    sent (those recorded ``not_sent`` after the server died took no time); 0 if none was."""
    sent = [r for r in records if r.error is None or r.error.kind != "not_sent"]
    return max(r.end_time for r in sent) - min(r.send_time for r in sent) if sent else 0.0
