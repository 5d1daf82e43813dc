"""LoadGen's early-stopping bound: the sample sizes it publishes, and the three verdicts around them."""

from __future__ import annotations

import pytest

from harness.metrics.tail_bound import claim, samples_needed


@pytest.mark.parametrize(("over", "percentile", "needed"), [
    (0, 0.99, 459),  # LoadGen at 99% confidence: a p99 claim with no request over the bound
    (1, 0.99, 662),  # ... with one over
    (0, 0.90, 44),   # a p90 claim with none over
])
def test_the_sample_sizes_loadgen_publishes(over: int, percentile: float, needed: int) -> None:
    assert samples_needed(over, percentile) == needed
    assert claim(needed, over, percentile) == "met"
    assert claim(needed - 1, over, percentile) == "insufficient samples"


def test_a_p99_claim_from_the_defaults_32_requests_is_never_met() -> None:
    assert claim(32, 0, 0.99) == "insufficient samples"
    assert claim(16, 0, 0.99) == "insufficient samples"


def test_many_requests_over_the_bound_miss_it_even_in_a_small_sample() -> None:
    assert claim(32, 5, 0.99) == "missed"  # 5 of 32 over a p99 bound: the p99 is above it, at 99%
    assert claim(32, 1, 0.99) == "insufficient samples"  # one of 32 is what a p99 at the bound gives 27% of the time
    assert claim(16, 16, 0.5) == "missed" and claim(16, 0, 0.5) == "met"  # a median is cheap to claim


def test_more_requests_over_the_bound_need_more_requests() -> None:
    needed = [samples_needed(over, 0.99) for over in range(5)]
    assert needed == sorted(needed) and len(set(needed)) == 5


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="percentile"):
        claim(10, 0, 99)
    with pytest.raises(ValueError, match="over"):
        claim(10, 11, 0.99)
