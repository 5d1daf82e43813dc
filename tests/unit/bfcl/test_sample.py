from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.bfcl import seeded_sample


@settings(max_examples=200, derandomize=True, deadline=None)
@given(size=st.integers(1, 1200), small=st.integers(1, 1200), large=st.integers(1, 1200), seed=st.integers(0, 9))
def test_a_smaller_sample_is_part_of_every_larger_one(size: int, small: int, large: int, seed: int) -> None:
    entries = tuple(range(size))
    small, large = sorted((small, large))
    few, more = seeded_sample(entries, "live_simple", small, seed), seeded_sample(entries, "live_simple", large, seed)
    assert set(few) <= set(more) and len(few) == min(small, size) and len(more) == min(large, size)
    assert list(few) == sorted(few)  # in BFCL's order


def test_the_committed_samples_are_what_they_were() -> None:
    # the recall instrument learnt live_simple's sample of 24 (seed 0), and the default scores its sample of 160: a
    # shuffle's first k is random.sample's draw wherever random.sample shuffled too (22 or more of 258)
    for limit in (24, 160):
        drawn = sorted(random.Random("bfcl:0:live_simple").sample(range(258), limit))
        assert list(seeded_sample(tuple(range(258)), "live_simple", limit, 0)) == drawn


def test_the_draw_depends_on_the_seed_and_the_category_only() -> None:
    entries = tuple(range(100))
    assert seeded_sample(entries, "a", 10, 1) == seeded_sample(entries, "a", 10, 1)
    assert seeded_sample(entries, "a", 10, 1) != seeded_sample(entries, "a", 10, 2)
    assert seeded_sample(entries, "a", 10, 1) != seeded_sample(entries, "b", 10, 1)
    assert seeded_sample(entries, "a", None, 1) == entries == seeded_sample(entries, "a", 100, 1)
