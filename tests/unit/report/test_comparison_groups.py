"""Matched comparisons grouped as an engineer states them: one line per pair of recipes with the range it moved over
and how many points clear the noise; per axis, the recipes against the axis's baseline, those whose frontiers do
not overlap it named together."""

from __future__ import annotations

from harness.analysis.frontier import Comparison, FrontierPoint, OperatingPoint, Series
from harness.report.comparison_groups import by_axis, group_comparisons


def series(speculation: str, model: str = "m") -> Series:
    point = FrontierPoint(label="c1", concurrency=1, interactivity=50.0, tok_s_per_device=100.0,
                          usd_per_device_hour=1.0, watts_per_device=None)
    return Series(model, "w", "vllm", "bf16", speculation, (point,), (point,))


def at(tok_s: float, launches: tuple[float, ...]) -> OperatingPoint:
    return OperatingPoint(interactivity=50.0, tok_s_per_device=tok_s, usd_per_mtok=1e6 / 3600 / tok_s,
                          tok_s_per_mw=None, concurrency=(1, 1), launch_tok_s=launches)


def compared(challenger: str, baseline: str, x: float | None, c: float = 0.0, b: float = 0.0,
             noisy: bool = False) -> Comparison:
    if x is None:
        return Comparison(("m", "w"), "speculation", series(challenger), series(baseline), None, None, None)
    spread = (0.5, 1.0, 1.6) if noisy else (0.99, 1.0, 1.01)
    return Comparison(("m", "w"), "speculation", series(challenger), series(baseline), x,
                      at(c, tuple(c * f for f in spread)), at(b, tuple(b * f for f in spread)))


def test_a_pair_is_one_group_with_its_ranges_and_standing() -> None:
    (group,) = group_comparisons([compared("mtp1", "off", 40.0, 150.0, 100.0),
                                  compared("mtp1", "off", 60.0, 120.0, 100.0, noisy=True),
                                  compared("mtp1", "off", 80.0, 90.0, 100.0)])
    assert (group.challenger_value, group.baseline_value, group.matched) == ("mtp1", "off", 3)
    assert group.interactivity == (40.0, 80.0)
    assert group.cheaper_pct is not None and round(group.cheaper_pct[0]) == -11 and round(group.cheaper_pct[1]) == 33
    assert (group.outside, group.ties, group.unknown) == (2, 1, 0)
    assert group.standing == "2 of 3 outside the launch noise, 1 inside it"


def test_an_axis_names_the_recipes_that_do_not_overlap_together() -> None:
    groups = group_comparisons([compared("mtp1", "off", 40.0, 150.0, 100.0), compared("mtp2", "off", None),
                                compared("mtp3", "off", None), compared("mtp3", "mtp1", 40.0, 90.0, 100.0)])
    ((axis, (panel,)),) = by_axis(groups, {"speculation": "off"})
    assert axis == "speculation" and panel.baseline_value == "off"
    assert [g.challenger_value for g in panel.matched] == ["mtp1"]  # mtp3 against mtp1 stays in the appendix
    assert panel.apart == ("mtp2", "mtp3")
