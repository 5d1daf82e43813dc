"""Each SLO bound on a latency percentile, judged on a cell's requests by the sample size it needs.

A bound the SLO sets (``ttft_p99_ms``: TTFT p99; ``tpot_p50_ms``: TPOT median; the per-request ``ttft_ms`` and
``tpot_ms``, which must hold for 99% of requests, so bound the p99) is a claim about a percentile. Its verdict is
``met``, ``missed`` or ``insufficient samples`` by LoadGen's early-stopping bound (``tail_bound``), from how many of
the cell's completed requests exceeded it; the claim also says how many requests it would need with that many over.
Launches and repeats pool their requests: the counts add up and the verdict is taken again.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from harness.config.matrix import Slo
from harness.load.records import RequestRecord
from harness.metrics.tail_bound import CONFIDENCE, Claim, claim, samples_needed

# SLO field -> (what it bounds, the latency, the percentile)
BOUNDS: tuple[tuple[str, str, str, float], ...] = (
    ("ttft_p99_ms", "TTFT p99", "ttft", 0.99), ("tpot_p50_ms", "TPOT median", "tpot", 0.50),
    ("ttft_ms", "TTFT p99", "ttft", 0.99), ("tpot_ms", "TPOT p99", "tpot", 0.99),
)


class SloClaim(BaseModel):
    """One SLO bound judged on a cell's requests, at LoadGen's 99% confidence."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str
    """The SLO key (``ttft_p99_ms``)."""
    name: str
    """What it bounds (``TTFT p99``)."""
    percentile: float
    bound_ms: float
    samples: int
    """Completed requests with this latency (a one-token answer has no TPOT)."""
    over: int
    """Of them, how many exceeded the bound."""
    verdict: Claim
    needed: int
    """The fewest requests that would support the claim with ``over`` of them over the bound."""
    confidence: float = CONFIDENCE

    @property
    def reason(self) -> str:
        counted = f"{self.over} of {self.samples} requests over {self.bound_ms:g} ms"
        if self.verdict == "insufficient samples":
            return (f"{self.name}: insufficient samples ({counted}; a claim at this percentile needs {self.needed} "
                    f"with {self.over} over)")
        return f"{self.name} {self.verdict} ({counted}, {self.confidence:.0%} confidence)"


def _judged(field: str, name: str, percentile: float, bound: float, samples: int, over: int) -> SloClaim:
    return SloClaim(field=field, name=name, percentile=percentile, bound_ms=bound, samples=samples, over=over,
                    verdict=claim(samples, over, percentile), needed=samples_needed(over, percentile))


def slo_claims(completed: Sequence[RequestRecord], slo: Slo | None) -> tuple[SloClaim, ...]:
    """The claim of each percentile bound ``slo`` sets, over the completed requests of one run."""
    if slo is None:
        return ()
    found = []
    for field, name, latency, percentile in BOUNDS:
        bound = getattr(slo, field)
        if bound is None:
            continue
        values = [v * 1000.0 for r in completed if (v := getattr(r, latency)) is not None]
        found.append(_judged(field, name, percentile, bound, len(values), sum(v > bound for v in values)))
    return tuple(found)


def pool_claims(runs: Sequence[Sequence[SloClaim]]) -> tuple[SloClaim, ...]:
    """The claims of several runs of one cell (launches, repeats) over all their requests together."""
    pooled: dict[str, SloClaim] = {}
    for claims in runs:
        for one in claims:
            seen = pooled.get(one.field)
            samples, over = (seen.samples + one.samples, seen.over + one.over) if seen else (one.samples, one.over)
            pooled[one.field] = _judged(one.field, one.name, one.percentile, one.bound_ms, samples, over)
    return tuple(pooled.values())
