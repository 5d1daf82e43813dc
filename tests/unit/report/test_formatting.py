"""How the narrative spells what it compares: signed changes in words, ranges, and a link to each figure's table."""

from __future__ import annotations

from harness.report.formatting import fmt_range, link, many, span, than


def test_a_change_reads_as_a_comparison() -> None:
    assert than(22.4) == "22% more" and than(-3.0, "dearer", "cheaper") == "3% cheaper"
    assert than(0.4) == "the same to the nearest percent" and than(None) == "–"


def test_a_range_of_changes_reads_in_one_direction_or_across_zero() -> None:
    assert span((12.0, 30.0), "cheaper", "dearer") == "12% to 30% cheaper"
    assert span((-8.0, -3.0), "cheaper", "dearer") == "3% to 8% dearer"
    assert span((-5.0, 12.0), "cheaper", "dearer") == "from 5% dearer to 12% cheaper"
    assert span((20.2, 19.8), "cheaper", "dearer") == "20% cheaper"


def test_figures_link_to_their_table_and_counts_take_their_noun() -> None:
    assert link("$0.39", "a-cost") == "[$0.39](#a-cost)" and link("–", "a-cost") == "–"
    assert fmt_range((1.21, 1.44), 2, "×") == "1.21–1.44×" and fmt_range((3.0, 3.04)) == "3.0"
    assert (many(1, "launch", "launches"), many(3, "launch", "launches"), many(2, "cell")) == \
        ("1 launch", "3 launches", "2 cells")
