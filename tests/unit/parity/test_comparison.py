from __future__ import annotations

import pytest

from harness.parity import ParityRule, compare, decoding_cost

from tests.support.bfcl_wire import fake_run


def verdicts(category: str, right: int, wrong: int, start: int = 0) -> dict[str, bool]:
    return {f"{category}_{start + i}": i < right for i in range(right + wrong)}


REFERENCE = fake_run(verdicts("simple_python", 180, 20))


def test_a_run_against_itself_passes_with_nothing_to_see() -> None:
    result = compare(REFERENCE, REFERENCE)
    assert result.passed is True and result.delta_pp == 0.0 and result.mcnemar_p == 1.0
    assert result.right_to_wrong == result.wrong_to_right == 0 and result.agreement == 1.0
    assert result.overall_accuracy == result.reference_accuracy == pytest.approx(0.9)
    assert (result.ci_low_pp, result.ci_high_pp) == (0.0, 0.0)


def test_a_large_significant_drop_fails_the_gate() -> None:
    # 30 items flip right -> wrong, none the other way: Δ = -15 pp, p = 2 / 2^30.
    candidate = fake_run({**verdicts("simple_python", 150, 50)})
    result = compare(REFERENCE, candidate, ParityRule(max_drop_pp=1.0, alpha=0.05))
    assert result.passed is False
    assert result.delta_pp == pytest.approx(-15.0)
    assert result.right_to_wrong == 30 and result.wrong_to_right == 0
    assert result.mcnemar_p == pytest.approx(2 / 2**30)
    assert result.ci_low_pp is not None and result.ci_high_pp is not None
    assert result.ci_low_pp < -15.0 < result.ci_high_pp < 0
    assert len(result.right_to_wrong_ids) == 30 and result.right_to_wrong_ids[0] == "simple_python_150"
    assert result.rule == "fails when Δ < -1 pp and the exact McNemar p < 0.05"
    assert "significant" in result.reason
    assert result.categories["simple_python"].delta_pp == pytest.approx(-15.0)


def test_a_drop_within_the_allowance_or_within_the_noise_passes() -> None:
    two_lost = fake_run(verdicts("simple_python", 178, 22))  # Δ -1 pp: not below -1 pp
    assert compare(REFERENCE, two_lost, ParityRule(max_drop_pp=1.0)).passed is True
    noisy = fake_run({**verdicts("simple_python", 176, 24)})  # Δ -2 pp, 4 flips: p = 0.125
    result = compare(REFERENCE, noisy, ParityRule(max_drop_pp=1.0))
    assert result.delta_pp == pytest.approx(-2.0) and result.mcnemar_p == pytest.approx(0.125)
    assert result.passed is True and "not significant" in result.reason
    assert compare(REFERENCE, noisy, ParityRule(max_drop_pp=1.0, alpha=0.2)).passed is False


def test_flips_both_ways_cancel_in_delta_but_not_in_agreement() -> None:
    swapped = {**verdicts("simple_python", 180, 20)}
    for i in range(10):
        swapped[f"simple_python_{i}"] = False
        swapped[f"simple_python_{190 + i}"] = True
    result = compare(REFERENCE, fake_run(swapped))
    assert result.delta_pp == pytest.approx(0.0) and result.passed is True
    assert result.right_to_wrong == result.wrong_to_right == 10 and result.mcnemar_p == 1.0
    assert result.agreement == pytest.approx(180 / 200)


def test_agreement_ignores_the_order_of_parallel_calls() -> None:
    a = fake_run({"parallel_0": True}, calls={"parallel_0": ({"f": {"x": 1}}, {"g": {"y": 2}})})
    b = fake_run({"parallel_0": True}, calls={"parallel_0": ({"g": {"y": 2}}, {"f": {"x": 1}})})
    c = fake_run({"parallel_0": True}, calls={"parallel_0": None})
    assert compare(a, b).agreement == 1.0 and compare(a, c).agreement == 0.0


def test_delta_uses_bfcl_weights_over_categories() -> None:
    reference = fake_run({**verdicts("simple_python", 10, 0), **verdicts("irrelevance", 10, 0)})
    candidate = fake_run({**verdicts("simple_python", 10, 0), **verdicts("irrelevance", 5, 5)})
    result = compare(reference, candidate)
    # Two sections of equal weight: irrelevance falls 50 points, the overall 25.
    assert result.delta_pp == pytest.approx(-25.0)
    assert result.categories["irrelevance"].delta_pp == pytest.approx(-50.0)


def test_runs_that_failed_or_share_no_items_are_not_judged() -> None:
    failed = fake_run({}, error="the server has no tool-call parser")
    result = compare(REFERENCE, failed)
    assert result.passed is None and result.delta_pp is None and "candidate run failed" in result.reason
    assert compare(failed, REFERENCE).passed is None
    other = fake_run(verdicts("multiple", 3, 0))
    result = compare(REFERENCE, other)
    assert result.passed is None and result.unpaired_items == 203


def test_only_paired_items_count() -> None:
    candidate = fake_run(verdicts("simple_python", 100, 0))  # the first 100 reference items, all right
    result = compare(REFERENCE, candidate)
    assert result.paired_items == 100 and result.unpaired_items == 100 and result.delta_pp == 0.0


def test_bad_gate_settings() -> None:
    with pytest.raises(ValueError):
        compare(REFERENCE, REFERENCE, ParityRule(alpha=0.0))


def test_decoding_cost_against_free() -> None:
    free = fake_run({**verdicts("simple_python", 5, 5), **verdicts("irrelevance", 4, 0)}, tpot_ms=10.0)
    required = fake_run(verdicts("simple_python", 8, 2), decoding="required", tpot_ms=12.5)
    cost = decoding_cost(free, required)
    assert cost.decoding == "required" and cost.baseline_decoding == "free" and cost.paired_items == 10
    assert cost.accuracy_delta_pp == pytest.approx(30.0)  # on the items both ran: irrelevance is not one
    assert cost.tpot_ratio == pytest.approx(1.25) and cost.paired_tpot_delta_median_ms == pytest.approx(2.5)
    assert cost.per_token_ratio is None  # no end-to-end times recorded: no ratio, never a guess


def test_decoding_cost_per_output_token_end_to_end() -> None:
    # A parser that holds text back: streamed TPOT ~0 for required, yet it took longer per token end to end.
    free = fake_run(verdicts("simple_python", 4, 0), e2e_ms=640.0, output_tokens=64)
    required = fake_run(verdicts("simple_python", 4, 0), decoding="required", tpot_ms=0.01, e2e_ms=960.0,
                        output_tokens=64)
    cost = decoding_cost(free, required)
    assert cost.per_token_ms == pytest.approx(15.0) and cost.baseline_per_token_ms == pytest.approx(10.0)
    assert cost.per_token_ratio == pytest.approx(1.5)


def test_each_comparison_states_its_power_against_a_five_point_drop() -> None:
    """200 items, none flipping: a 5-point drop would flip at least 5% of them, and 200 such items see it with
    the power the exact sum gives; 15% of items flipping (30 of 200) needs several times as many."""
    from harness.parity.paired_stats import items_needed, mcnemar_power

    quiet = compare(REFERENCE, REFERENCE)
    assert quiet.discordance == 0.0 and quiet.items_needed == items_needed(0.05, 0.05)
    assert quiet.power == pytest.approx(mcnemar_power(200, 0.05, 0.05))
    noisy = compare(REFERENCE, fake_run(verdicts("simple_python", 150, 50)))
    assert noisy.discordance == pytest.approx(0.15)
    assert noisy.items_needed is not None and quiet.items_needed is not None
    assert noisy.items_needed > 2 * quiet.items_needed and noisy.power is not None and noisy.power < quiet.power


def test_a_pass_on_a_sample_too_small_to_see_a_drop_is_inconclusive() -> None:
    small = fake_run(verdicts("simple_python", 30, 10))
    weak = compare(small, small, ParityRule(min_power=0.8))
    assert weak.passed is True and not weak.conclusive  # 40 items: about 1% power against a 5-point drop
    assert weak.power is not None and weak.power < 0.05 and weak.items_needed == 157
    assert "inconclusive: 40 paired items had 1.4% power against a 5-point drop (157 needed for 80%)" in weak.reason
    assert weak.rule.endswith("; a pass counts when the sample had at least 80% power against a 5-point drop")
    assert compare(small, small).conclusive  # min_power 0: every pass counts, as before the rule
    strong = compare(REFERENCE, REFERENCE, ParityRule(min_power=0.8))  # 200 items, 0 flips (5% assumed): over 80%
    assert strong.passed is True and strong.conclusive and strong.power is not None and strong.power >= 0.8
    fail = compare(REFERENCE, fake_run(verdicts("simple_python", 150, 50)), ParityRule(min_power=1.0))
    assert fail.passed is False and fail.conclusive  # a significant drop is a finding at any power


def test_zeros_compared_with_zeros_see_nothing() -> None:
    # The reference answers nothing right: no drop can show, at any sample size (the empty signal of a model that
    # never calls a tool).
    zeros = fake_run(verdicts("simple_python", 0, 400))
    result = compare(zeros, zeros, ParityRule(min_power=0.8))
    assert result.passed is True and result.power == 0.0 and result.items_needed is None
    assert not result.conclusive
    assert "inconclusive: the reference answers 0% of the 400 items right, too few to lose 5 points" in result.reason
