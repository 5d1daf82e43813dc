"""Speculative acceptance per request: the distribution behind the cell's one acceptance length.

The server's counters give one acceptance length per cell; requests differ (a prompt the drafter predicts well
accepts long runs, another almost nothing), and that spread is what decides tail TPOT under speculation. Two
sources, both per completed request:

- ``server``: vLLM's per-request speculative-decoding metrics (``--per-request-spec-decode-metrics``), the histogram
  of accepted drafts per verify step that rides on the final usage chunk; 1 + accepted / steps.
- ``stream``: the stream's own structure, tokens after the first chunk / chunks after it. One chunk is one engine
  step while the client keeps up, so it reads the same figure from any server (SGLang included), and reads 1.0
  without speculation; a lagging client merges steps and inflates it, which the cross-check against ``server``
  shows.

``lengths`` is the server's where every request carried it, else the stream's; both are kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from harness.load.records import RequestRecord


class RequestAcceptance(BaseModel):
    """Tokens per decode step, one value per completed request (pooled over a cell's launches)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Literal["server", "stream"]
    """Where ``lengths`` came from."""
    lengths: tuple[float, ...]
    stream_lengths: tuple[float, ...]
    """From the stream's chunks, always; equal to ``lengths`` when ``source`` is ``stream``."""

    def quantile(self, q: float) -> float:
        return float(np.percentile(self.lengths, q * 100.0))

    @property
    def median(self) -> float:
        return self.quantile(0.5)

    @property
    def stream_median(self) -> float | None:
        return float(np.median(self.stream_lengths)) if self.stream_lengths else None


def request_acceptance(completed: Sequence[RequestRecord]) -> RequestAcceptance | None:
    """The cell's per-request acceptance; None when no request decoded past its first chunk."""
    stream = [v for r in completed if (v := r.steps_acceptance_length) is not None]
    if not stream:
        return None
    server = [v for r in completed if (v := r.server_acceptance_length) is not None]
    # The server's figure only when every request has it: a mixed list would compare two definitions.
    if server and len(server) == len(stream):
        return RequestAcceptance(source="server", lengths=_rounded(server), stream_lengths=_rounded(stream))
    return RequestAcceptance(source="stream", lengths=_rounded(stream), stream_lengths=_rounded(stream))


def pool_request_acceptance(values: Sequence[RequestAcceptance | None]) -> RequestAcceptance | None:
    """Launches' per-request figures as one sample (every request of every launch)."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    source: Literal["server", "stream"] = "server" if all(v.source == "server" for v in present) else "stream"
    lengths = [x for v in present for x in (v.lengths if source == "server" else v.stream_lengths)]
    stream = [x for v in present for x in v.stream_lengths]
    return RequestAcceptance(source=source, lengths=tuple(lengths), stream_lengths=tuple(stream))


def _rounded(values: Sequence[float]) -> tuple[float, ...]:
    # four decimals: exact for any ratio of two token counts under 10^4, and summary.json stays readable
    return tuple(round(v, 4) for v in values)
