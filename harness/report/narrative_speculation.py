"""What the narrative says about speculation: a speculative ship recipe beside its ``off`` twin, and each method's
ends across the concurrencies it ran at, with where its speedup stops paying.

Gathered from the speculation pairs the report's rows already hold and the crossovers
``harness.analysis.speculation_crossover`` found; nothing is judged again here. ``harness.report.narrative`` states
them in the decision's defence and the speculation paragraph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.analysis.speculation_crossover import Crossover
from harness.analysis.speculation_effect import series_name
from harness.report.rows import CellRow, PairRow


@dataclass(frozen=True, slots=True)
class SpeculationDefence:
    """A speculative ship recipe beside its ``off`` twin at the shipped concurrency, and its series' crossover."""

    pair: PairRow | None
    """The ship cell beside its twin; None when the twin was not measured."""
    crossover: Crossover | None


def speculation_defence(ship: CellRow, pairs: Sequence[PairRow], crossovers: Sequence[Crossover]
                        ) -> SpeculationDefence | None:
    """The ship cell beside its ``off`` twin and its series' crossover; None when the ship recipe does not
    speculate."""
    if ship.cell.server.speculation.is_off:
        return None
    series = series_name(ship.cell)
    return SpeculationDefence(next((p for p in pairs if p.speculative.cell.cell_id == ship.cell.cell_id), None),
                              next((x for x in crossovers if x.series == series), None))


@dataclass(frozen=True, slots=True)
class SpeculationLine:
    """One speculation method on one model, workload and precision, across the concurrencies it ran at."""

    model: str
    workload: str
    precision: str
    method: str
    first: PairRow
    """The pair at the lowest concurrency."""
    last: PairRow
    """The pair at the highest concurrency (the same pair when it ran at one)."""
    acceptance: tuple[float, float] | None
    """The lowest and highest acceptance rate over its concurrencies."""
    crossover: Crossover | None = None
    """Where its TPOT speedup falls through 1.0 (``harness.analysis.speculation_crossover``)."""


def speculation_lines(pairs: Sequence[PairRow], crossovers: Sequence[Crossover] = ()
                      ) -> tuple[SpeculationLine, ...]:
    """The measured speculative cells beside their ``off`` twins, one line per method: its ends across
    concurrency."""
    groups: dict[tuple[str, str, str, str], list[PairRow]] = {}
    for p in pairs:
        if p.tpot_speedup is None and p.throughput_ratio is None:
            continue  # a side not measured (yet): nothing to say
        c = p.speculative.cell
        groups.setdefault((c.server.model_name, c.workload_name, c.server.precision.label,
                           c.server.speculation.label), []).append(p)
    lines = []
    for (model, workload, precision, method), found in groups.items():
        ordered = sorted(found, key=lambda p: p.speculative.cell.concurrency)
        rates = [r for p in ordered if (r := p.speculative.acceptance_rate) is not None]
        series = series_name(ordered[0].speculative.cell)
        lines.append(SpeculationLine(model, workload, precision, method, ordered[0], ordered[-1],
                                     (min(rates), max(rates)) if rates else None,
                                     next((x for x in crossovers if x.series == series), None)))
    return tuple(lines)
