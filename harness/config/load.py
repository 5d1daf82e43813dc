"""How a cell's requests are paced, as the matrix says it (``load:`` and ``axes.request_rate``).

The schedules themselves (arrival times, ramp-up offsets) are ``harness.load.arrivals``; this module is the
schema only.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, field_validator


class LoadPattern(BaseModel):
    """How a cell's requests are paced. The defaults are fixed concurrency, bounded by request count."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    request_rate: float | None = Field(
        None, gt=0, description="requests per second; none (or .inf): send whenever a concurrency slot is free")
    burstiness: float = Field(1.0, gt=0, description="gamma shape of inter-arrival gaps: 1 Poisson, <1 bursty "
                                                     "(at a request rate; fixed concurrency ignores it)")
    ramp_up_s: float = Field(0.0, ge=0, description="linear ramp of the load over the first seconds")
    duration_s: float | None = Field(None, gt=0, description="bound the run by time instead of request count")

    @field_validator("request_rate", mode="before")
    @classmethod
    def _infinite_is_none(cls, value: object) -> object:
        return None if isinstance(value, int | float) and math.isinf(value) else value

    @property
    def label(self) -> str:
        """Short tag for cell labels: empty at the defaults, so existing labels do not change."""
        parts = []
        if self.request_rate is not None:
            parts.append(f"r{self.request_rate:g}" + (f"b{self.burstiness:g}" if self.burstiness != 1.0 else ""))
        if self.ramp_up_s:
            parts.append(f"ramp{self.ramp_up_s:g}s")
        if self.duration_s is not None:
            parts.append(f"{self.duration_s:g}s")
        return "-".join(parts)
