"""A cell's parity verdict over its decodings, as stored in the cell's ``parity.json``.

The top level carries the three keys the report, the recommendation and the gate read (``passed``, ``delta_pp``,
``overall_accuracy``), taken from the decoding that did worst against its reference; below them are every
decoding's full comparison and, for each variant, its cost against ``free``. A cell at the reference precision is
judged on a rerun of its free decoding against the first run (``parity.rerun_reference``), and otherwise compared
with itself (Δ 0, no flips, p = 1), with the same file shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from harness.parity.comparison import DecodingCost, ParityComparison
from harness.store import write_atomic
from harness.stored_files import load_or_set_aside


class CellParity(BaseModel):
    """Parity of one cell: the headline verdict, and every decoding's comparison and cost."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    passed: bool | None
    """False when any decoding fails the gate; None when none fails but one could not be judged."""
    delta_pp: float | None
    overall_accuracy: float | None
    decoding: str | None
    """The decoding the headline figures come from: the worst failing one, else the first unjudged one, else the
    inconclusive one with the lowest Δ, else the one with the lowest Δ."""
    rule: str
    reason: str
    comparisons: dict[str, ParityComparison]
    costs: dict[str, DecodingCost] = {}

    @property
    def conclusive(self) -> bool:
        """A failure is a finding; a pass is one only when every decoding's pass is (``ParityComparison``)."""
        if self.passed is None:
            return False
        return not self.passed or all(c.conclusive for c in self.comparisons.values())


def cell_parity(comparisons: Mapping[str, ParityComparison],
                costs: Mapping[str, DecodingCost] | None = None) -> CellParity:
    """Fold per-decoding comparisons (keyed by decoding) into the cell's verdict."""
    if not comparisons:
        raise ValueError("a cell's parity needs at least one comparison")
    verdicts = [c.passed for c in comparisons.values()]
    passed = False if False in verdicts else (None if None in verdicts else True)
    # The headline is the decoding that decides the verdict: the worst failing one, else the first that could
    # not be judged, else an inconclusive pass (what keeps the cell from a finding), else the one with the lowest Δ.
    candidates = [n for n, c in comparisons.items() if c.passed is passed]
    if passed and not all(comparisons[n].conclusive for n in candidates):
        candidates = [n for n in candidates if not comparisons[n].conclusive]
    name = min(candidates, key=lambda n: comparisons[n].delta_pp or 0.0)
    headline = comparisons[name]
    return CellParity(passed=passed, delta_pp=headline.delta_pp, overall_accuracy=headline.overall_accuracy,
                      decoding=name, rule=headline.rule, reason=f"{name}: {headline.reason}",
                      comparisons=dict(comparisons), costs=dict(costs or {}))


def write_cell_parity(parity: CellParity, path: Path) -> None:
    """Write the verdict as JSON, atomically (normally to ``<cell>/parity.json``)."""
    write_atomic(path, parity.model_dump_json(indent=1))


def read_cell_parity(path: Path) -> CellParity:
    """Read a verdict written by ``write_cell_parity``."""
    return CellParity.model_validate_json(path.read_text())


def find_cell_parity(path: Path) -> CellParity | None:
    """The verdict at ``path`` (``Store.parity_verdict_path``), or None where the cell has none (not judged, or
    written by an incompatible version; a damaged one is set aside and the next run judges the cell again)."""
    return load_or_set_aside(path, CellParity.model_validate_json)
