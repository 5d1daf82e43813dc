"""Imbalance per layer, the distance between two intervals' routing, and a workload difference judged against the
noise of routing the same workload twice."""

from __future__ import annotations

import pytest

from harness.analysis.expert_balance import (
    engine_distances,
    layer_balance,
    pool_counts,
    routing_distance,
    workload_distances,
)
from harness.servers.expert_load_collectors import ExpertCounts


def counts(*layers: tuple[int, ...], ids: tuple[int, ...] | None = None) -> ExpertCounts:
    return ExpertCounts(collector="c", layers=ids or tuple(range(len(layers))), experts=len(layers[0]), top_k=2,
                        counts=layers, rows=tuple(sum(row) // 2 for row in layers), hook_seconds=0.1)


def test_layer_balance() -> None:
    (even, skewed) = layer_balance(counts((25, 25, 25, 25), (70, 10, 10, 10)))
    assert even.max_over_mean == 1.0 and even.cv == 0.0 and even.hottest_share == 0.25
    assert skewed.max_over_mean == pytest.approx(2.8) and skewed.hottest_expert == 0
    assert skewed.hottest_share == pytest.approx(0.7) and skewed.cv == pytest.approx(1.039, abs=1e-3)
    assert layer_balance(counts((0, 0, 0, 0))) == []  # a layer that routed nothing says nothing


def test_routing_distance_is_zero_for_the_same_shape_and_one_for_disjoint() -> None:
    a = counts((10, 30, 0, 0), (5, 5, 5, 5))
    assert routing_distance(a, counts((20, 60, 0, 0), (1, 1, 1, 1))) == pytest.approx((0.0, 0.0), abs=1e-9)
    mean, largest = routing_distance(a, counts((0, 0, 7, 3), (5, 5, 5, 5))) or (None, None)
    assert largest == pytest.approx(1.0) and mean == pytest.approx(0.5)
    assert routing_distance(a, counts((1, 1, 1, 1), ids=(7,))) is None  # no layer in common


def test_pooling_adds_intervals() -> None:
    pooled = pool_counts([counts((1, 2, 3, 4)), counts((4, 3, 2, 1))])
    assert pooled is not None and pooled.counts == ((5, 5, 5, 5),) and pooled.hook_seconds == pytest.approx(0.2)
    assert pool_counts([]) is None


def test_a_workload_difference_is_judged_against_the_floor_of_the_same_workload_twice() -> None:
    random_a, random_b = counts((50, 50, 50, 50)), counts((52, 48, 51, 49))
    agent = counts((120, 40, 20, 20))
    (found,) = workload_distances("s", {"random": [random_a, random_b], "agent": [agent]})
    assert (found.first, found.second) == ("agent", "random")
    assert found.floor is not None and found.mean > found.floor and found.verdict == "routes differently"
    (same,) = workload_distances("s", {"random": [random_a, random_b], "again": [counts((51, 50, 49, 50))]})
    assert same.verdict == "within the noise"
    (unknown,) = workload_distances("s", {"random": [random_a], "agent": [agent]})
    assert unknown.floor is None and unknown.verdict.startswith("noise unknown")


def test_two_engines_on_the_same_requests_are_judged_against_the_range_of_two_request_sets() -> None:
    sglang_c1, sglang_c4 = counts((50, 50, 50, 50)), counts((60, 40, 55, 45))
    vllm_c1, vllm_c4 = counts((51, 50, 49, 50)), counts((40, 60, 45, 55))
    within = {("sglang", "k"): [sglang_c1, sglang_c4], ("vllm", "k"): [vllm_c1, vllm_c4]}
    (agree,) = engine_distances({("k c1", "k"): {"sglang": sglang_c1, "vllm": vllm_c1}}, within)
    assert agree.floor is not None and agree.mean < agree.floor[0] and agree.verdict.startswith("agree")
    (apart,) = engine_distances({("k c1", "k"): {"sglang": sglang_c1, "vllm": counts((120, 40, 20, 20))}}, within)
    assert apart.verdict == "route differently"
    (unknown,) = engine_distances({("k c1", "k"): {"sglang": sglang_c1, "vllm": vllm_c1}}, {})
    assert unknown.floor is None and unknown.verdict.startswith("noise unknown")
