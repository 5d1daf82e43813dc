"""The axes a matrix sweeps, an SLO search as an axis value, and the rules that pick cells by axis selectors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harness.config.axes import AXIS_NAMES, Axes, Claims, LoadSearch, MoreLaunches, MoreRequests


def test_the_defaults_are_one_point_per_axis() -> None:
    axes = Axes()
    assert (axes.runtime, axes.concurrency, axes.model, axes.workload, axes.request_rate) == (("vllm",), (1,), None,
                                                                                               None, None)
    assert [s.label for s in axes.speculation] == ["off"] and [t.label for t in axes.topology] == ["colocated"]
    assert set(AXIS_NAMES) == set(Axes.model_fields) and "concurrency" in AXIS_NAMES


@pytest.mark.parametrize("value", [0, -4])
def test_concurrency_must_be_positive(value: int) -> None:
    with pytest.raises(ValidationError, match="greater than 0"):
        Axes.model_validate({"concurrency": [value]})


def test_an_axis_needs_a_value() -> None:
    with pytest.raises(ValidationError, match="at least one value"):
        Axes.model_validate({"runtime": []})


def test_a_search_is_an_axis_value_beside_points() -> None:
    axes = Axes.model_validate({"concurrency": [1, {"search": "slo", "max": 16}], "request_rate": [2.5]})
    point, search = axes.concurrency
    assert point == 1 and isinstance(search, LoadSearch) and search.label == "search-slo[1..16]"
    assert (search.max_probes, search.saturation, search.resolution) == (8, 0.05, 0.1)


def test_a_search_range_must_be_ordered_and_bounded() -> None:
    with pytest.raises(ValidationError, match=r"max \(2\) is below min \(4\)"):
        LoadSearch.model_validate({"search": "slo", "min": 4, "max": 2})
    for bad in ({"search": "fastest"}, {"search": "slo", "max_probes": 1}, {"search": "slo", "resolution": 1}):
        with pytest.raises(ValidationError):
            LoadSearch.model_validate(bad)


def test_rules_hold_their_selectors_and_counts() -> None:
    more = MoreLaunches.model_validate({"cells": {"concurrency": 1}, "launches": 3})
    assert more.cells == {"concurrency": 1} and more.launches == 3
    claims = Claims.model_validate({"cells": [{"concurrency": 2}, {"workload": "w"}], "num_requests": 460})
    assert claims.cells[1] == {"workload": "w"}
    for model, bad in ((MoreLaunches, {"cells": {"concurrency": 1}, "launches": 1}),
                       (MoreLaunches, {"cells": {}, "launches": 2}),
                       (MoreRequests, {"cells": {"concurrency": 1}, "num_requests": 0}),
                       (Claims, {"cells": [], "num_requests": 10})):
        with pytest.raises(ValidationError):
            model.model_validate(bad)
