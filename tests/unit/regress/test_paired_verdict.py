"""A paired check's looks: figures settle on their per-round ratios, keep the first settling verdict, and earn
another round only while they are doubtful and could still settle."""

from __future__ import annotations

from harness.config import GateSpec
from harness.metrics import CellSummary, per_look_level
from harness.regress.paired_verdict import Looks, Round, Rule, look_all
from harness.result_records import CellResult
from harness.store import now_iso

from tests.support.stored_cells import summary

SPEC = GateSpec(metrics=["output_throughput", "tpot_ms.median", "error_rate"], tolerance=0.10)
RULE = Rule(3, 10, 30, per_look_level(3, 10))


def _result(label: str, cell: CellSummary | None, status: str = "ok") -> CellResult:
    return CellResult(cell_id="c", label=label, server_id="s", status=status,
                      started_at=now_iso(), finished_at=now_iso(), summary=cell,
                      reason="boom" if cell is None else None)


def _round(ref_tok_s: float, cand_tok_s: float, ref_tpot: float = 5.0, cand_tpot: float = 5.0,
           cand_failed: int = 0) -> Round:
    return ({"a": _result("a", summary(ref_tok_s, ref_tpot))},
            {"a": _result("a", summary(cand_tok_s, cand_tpot, failed=cand_failed))})


def _rows(rounds: list[Round], looks: Looks | None = None) -> dict[str, tuple[str, str]]:
    rows, more = look_all(rounds, SPEC, RULE, looks or Looks())
    return {row.metric: (row.status, row.note) for row in rows} | {"more": (str(more), "")}


def test_drift_shared_by_a_round_cancels_and_the_figures_settle_ok() -> None:
    # the machine's speed swings 30% between rounds; the two sides of each round agree within 1%
    rounds = [_round(100, 101, 5.0, 5.0), _round(130, 129, 4.0, 4.02), _round(80, 80.5, 6.0, 5.97)]
    rows = _rows(rounds)
    assert rows["output_throughput"][0] == "ok" and rows["output_throughput"][1] == "settled after 3 rounds"
    assert rows["tpot_ms.median"][0] == "ok"
    assert rows["error_rate"][0] == "ok"
    assert rows["more"][0] == "False"


def test_a_planted_slowdown_reads_regressed() -> None:
    rounds = [_round(100, 78), _round(130, 101), _round(80, 63)]
    assert _rows(rounds)["output_throughput"][0] == "regressed"


def test_below_the_minimum_nothing_settles_and_more_rounds_are_due() -> None:
    rows = _rows([_round(100, 100), _round(100, 100)])
    assert rows["output_throughput"] == ("inconclusive", "2 of at least 3 rounds")
    assert rows["more"][0] == "True"


def test_a_settled_verdict_is_kept_at_later_looks() -> None:
    looks = Looks()
    rounds = [_round(100, 101), _round(130, 129), _round(80, 80.5)]
    assert _rows(rounds, looks)["output_throughput"][0] == "ok"
    # a wild fourth round would widen the interval; the figure keeps the verdict of the look that settled it
    assert _rows([*rounds, _round(100, 60)], looks)["output_throughput"] == ("ok", "settled after 3 rounds")


def test_a_noisy_figure_at_the_bound_stops_earning_rounds() -> None:
    # -10% on average, 5% of noise: inconclusive now, and its projected interval at 10 rounds still holds -10%
    rounds = [_round(100, 86), _round(100, 94), _round(100, 90)]
    rows, more = look_all(rounds, GateSpec(metrics=["output_throughput"], tolerance=0.10), RULE, Looks())
    assert rows[0].status == "inconclusive" and rows[0].note == "inconclusive after 3 rounds"
    assert rows[0].detectable is not None and rows[0].detectable > 0.10
    assert not more


def test_errors_are_exact_and_a_failed_or_missing_cell_fails() -> None:
    assert _rows([_round(100, 100, cand_failed=1)] * 3)["error_rate"][0] == "regressed"
    failed: Round = ({"a": _result("a", summary(100, 5))}, {"a": _result("a", None, "failed")})
    rows, _ = look_all([failed], SPEC, RULE, Looks())
    assert [(r.status, r.note) for r in rows] == [("failed", "the candidate failed in round 1: boom")]
    missing: Round = ({"a": _result("a", summary(100, 5)), "b": _result("b", summary(1, 5))},
                      {"a": _result("a", summary(100, 5)), "c": _result("c", summary(1, 5))})
    statuses = {r.label: r.status for r in look_all([missing], SPEC, RULE, Looks())[0] if r.metric == "cell"}
    assert statuses == {"b": "missing", "c": "new"}


def test_the_focus_limits_the_check_to_the_doubtful_figures() -> None:
    rounds = [_round(100, 101), _round(130, 129), _round(80, 80.5)]
    rows, _ = look_all(rounds, SPEC, RULE, Looks(), focus=[("a", "tpot_ms.median")])
    assert [r.metric for r in rows] == ["tpot_ms.median"]
