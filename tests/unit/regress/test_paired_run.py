"""When a paired check stops: not before its minimum, when every figure settled, when none could settle by the cap,
at the cap of rounds, or when another round would pass the cap of minutes."""

from __future__ import annotations

from harness.regress.paired_run import _stop
from harness.regress.paired_verdict import Rule

RULE = Rule(min_rounds=3, max_rounds=6, max_minutes=10, level=0.02)


def test_the_stop_rule() -> None:
    assert _stop(2, more=True, doubtful=True, rule=RULE, seconds=[60, 60], elapsed=120) == ""
    assert _stop(2, more=False, doubtful=False, rule=RULE, seconds=[60, 60], elapsed=120) == ""  # the minimum first
    assert _stop(3, more=False, doubtful=False, rule=RULE, seconds=[60] * 3, elapsed=180) == "every figure settled"
    # hopeless-looking figures get two rounds past the minimum first: one bad launch can make them look so
    assert _stop(3, more=False, doubtful=True, rule=RULE, seconds=[60] * 3, elapsed=180) == ""
    assert _stop(4, more=False, doubtful=True, rule=RULE, seconds=[60] * 4, elapsed=240) == ""
    assert _stop(5, more=False, doubtful=True, rule=RULE, seconds=[60] * 5, elapsed=300) == (
        "no inconclusive figure could settle by round 6 at its noise")
    assert _stop(3, more=False, doubtful=True, rule=Rule(3, 4, 10, 0.02), seconds=[60] * 3, elapsed=180) == ""
    assert _stop(4, more=False, doubtful=True, rule=Rule(3, 4, 10, 0.02), seconds=[60] * 4, elapsed=240) == (
        "the cap of 4 rounds")
    assert _stop(3, more=True, doubtful=True, rule=RULE, seconds=[60] * 3, elapsed=180) == ""
    assert _stop(6, more=True, doubtful=True, rule=RULE, seconds=[60] * 6, elapsed=360) == "the cap of 6 rounds"
    assert _stop(6, more=False, doubtful=True, rule=RULE, seconds=[60] * 6, elapsed=360) == "the cap of 6 rounds"
    # 9.5 minutes gone and rounds of a minute: the next one would end past 10
    assert _stop(4, more=True, doubtful=True, rule=RULE, seconds=[60] * 4, elapsed=570).startswith(
        "the cap of 10 minutes")
