"""Cost levers as measured: how $/MTok moves when one axis of a recipe changes, beside what the seed claims.

A lever is a change on one axis (precision, speculation, concurrency step, parallelism/EP, runtime) between
two measured cells that agree on everything else (model, workload, the other axes). Its effect is the relative
change in output $/MTok; one matrix has one price per device, so that is ``tok/s_before / tok/s_after - 1``, and
it needs no price to be exact. The seed's claimed ranges (shared/seeds/000, §5.3) are inputs, printed as such.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median

from harness.analysis.cost import PricedCell
from harness.config.matrix import AXIS_NAMES, Matrix
from harness.plan.cells import Cell

LEVER_AXES = ("precision", "speculation", "concurrency", "parallel", "runtime")


@dataclass(frozen=True, slots=True)
class SeedClaim:
    """One row of the seed's 'what moves the cost model' table (a published claim, not a measurement)."""

    text: str
    axis: str
    before: str
    after: str
    lo_pct: float
    hi_pct: float


SEED_CLAIMS: tuple[SeedClaim, ...] = (
    SeedClaim("FP4 vs FP8", "precision", "fp8", "fp4", -40.0, -30.0),
    SeedClaim("MTP / EAGLE", "speculation", "off", "mtp", -55.0, -40.0),
    SeedClaim("MTP / EAGLE", "speculation", "off", "eagle3", -55.0, -40.0),
    SeedClaim("Concurrency 16 -> 64", "concurrency", "16", "64", -65.0, -50.0),
    SeedClaim("Concurrency 64 -> 256", "concurrency", "64", "256", -20.0, -10.0),
    SeedClaim("EP=8 -> EP=16", "parallel", "ep8", "ep16", -20.0, -10.0),
)
UNMEASURED_CLAIMS = ("Disaggregation (NVL72 in-domain): -20 to -35% (the harness runs colocated servers only)",)


def _label(cell: Cell, axis: str) -> str:
    value = cell.axis_value(axis)
    return str(getattr(value, "label", value))


# How a claim names an axis value: weights precision, speculation method, EP size, concurrency, runtime.
_CLAIM_KEY: dict[str, Callable[[Cell], str]] = {
    "precision": lambda c: c.server.precision.weights,
    "speculation": lambda c: c.server.speculation.method,
    "parallel": lambda c: f"ep{c.server.parallel.ep}",
    "concurrency": lambda c: str(c.concurrency),
    "runtime": lambda c: c.server.runtime,
}


@dataclass(frozen=True, slots=True)
class Lever:
    """One measured change on one axis, over every pair of cells that shows it."""

    axis: str
    before: str
    after: str
    changes_pct: tuple[float, ...]
    """Change in output $/MTok per pair, percent (negative: cheaper)."""
    claim: SeedClaim | None

    @property
    def median_pct(self) -> float:
        return float(median(self.changes_pct))

    @property
    def lo_pct(self) -> float:
        return min(self.changes_pct)

    @property
    def hi_pct(self) -> float:
        return max(self.changes_pct)

    @property
    def verdict(self) -> str:
        claim = self.claim
        if claim is None:
            return "no seed claim"
        if claim.lo_pct <= self.median_pct <= claim.hi_pct:
            return "agrees"
        if self.median_pct > 0:
            return "disagrees: it made tokens dearer here"
        return "disagrees: a smaller saving here" if self.median_pct > claim.hi_pct else \
            "disagrees: a larger saving here"


def _steps(matrix: Matrix, axis: str) -> list[tuple[str, str]]:
    """The (before, after) changes a lever is measured for: consecutive concurrency steps; on other axes the
    first value listed against each other value."""
    if axis == "concurrency":
        values = [str(c) for c in sorted(matrix.axes.concurrency)]
        return list(zip(values, values[1:], strict=False))
    raw = getattr(matrix.axes, axis)
    values = [v if isinstance(v, str) else v.label for v in raw]
    return [(values[0], v) for v in values[1:]]


def _identity(cell: Cell, axis: str) -> tuple[str, ...]:
    """Every other axis of the matrix, which two cells must share to isolate ``axis``."""
    return tuple(_label(cell, a) for a in AXIS_NAMES if a != axis)


def _claim(axis: str, before: Cell, after: Cell) -> SeedClaim | None:
    key = _CLAIM_KEY[axis]
    return next((c for c in SEED_CLAIMS if c.axis == axis and c.before == key(before) and c.after == key(after)),
                None)


def measure_levers(rows: Sequence[PricedCell], matrix: Matrix) -> list[Lever]:
    """Every lever the matrix's measured cells show, in axis order."""
    measured = [r for r in rows if r.cost is not None and r.cost.output_tok_s > 0]
    levers = []
    for axis in LEVER_AXES:
        for before, after in _steps(matrix, axis):
            changes: list[float] = []
            claim: SeedClaim | None = None
            for a in (r for r in measured if _label(r.cell, axis) == before):
                for b in (r for r in measured if _label(r.cell, axis) == after):
                    if _identity(a.cell, axis) == _identity(b.cell, axis):
                        assert a.cost is not None and b.cost is not None
                        changes.append((a.cost.output_tok_s / b.cost.output_tok_s - 1.0) * 100.0)
                        claim = claim or _claim(axis, a.cell, b.cell)
            if changes:
                levers.append(Lever(axis, before, after, tuple(changes), claim))
    return levers
