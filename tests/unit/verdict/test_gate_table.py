"""The gate's table as ``harness gate`` prints it: every row with its interval and noise, and what an inconclusive
figure could have seen (the smallest worsening it reads as regressed 4 times in 5)."""

from __future__ import annotations

from harness.verdict import GateResult, GateRow
from harness.verdict.gate_table import detectable_text, format_table, interval_text


def _row(status: str, detectable: float | None) -> GateRow:
    return GateRow("m/vllm/bf16/tp1/off/w/c4", "tpot_ms.median", "ms", "lower", 2.0, 2.1, status,  # type: ignore[arg-type]
                   1.05, 0.88, 1.25, 0.09, (3, 3), detectable=detectable)


def test_an_inconclusive_figure_says_what_it_could_have_seen() -> None:
    result = GateResult(rows=(_row("inconclusive", 0.234), _row("inconclusive", 0.41), _row("ok", 0.12)),
                        provenance=(), tolerance=0.10, launches=3)
    table = format_table(result)
    assert "| detectable here |" in table and "| 23% |" in table
    assert "could see a worsening of 23% to 41% or more" in table  # the inconclusive ones only, not the ok row
    assert "`harness regress MATRIX --against REV`" in table  # no commit recorded: a placeholder
    dated = GateResult(rows=result.rows, provenance=(), tolerance=0.10, launches=3, baseline_commit="0123456789abcdef")
    assert "`harness regress matrices/m.yaml --against 0123456789ab` (paired rounds" in format_table(dated,
                                                                                                  "matrices/m.yaml")
    paired = GateResult(rows=result.rows, provenance=(), tolerance=0.10, launches=3, machine_speed="paired")
    assert "--against" not in format_table(paired)  # a paired verdict has no other hour to remove


def test_one_size_is_said_once_and_unknown_sizes_are_dashes() -> None:
    one = format_table(GateResult(rows=(_row("inconclusive", 0.3),), provenance=(), tolerance=0.10, launches=3))
    assert "a worsening of 30% or more" in one
    quiet = format_table(GateResult(rows=(_row("ok", None),), provenance=(), tolerance=0.10, launches=3))
    assert "could see a worsening" not in quiet
    assert detectable_text(_row("ok", None)) == "–" and interval_text(_row("ok", None)) == "+5.0% [-12.0%, +25.0%]"
