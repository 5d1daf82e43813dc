"""The gateable figures: named as the gate and the history name them, read from a summary or per launch."""

from __future__ import annotations

import pytest

from harness.config.gates import GATED_METRICS
from harness.metrics import GATEABLE, combine_launches, gated_metric

from tests.support.stored_cells import summary


def test_gated_metric_names() -> None:
    assert gated_metric("ttft_ms.p99").value(summary(100.0, 20.0, ttft_ms=50.0)) == pytest.approx(60.0)
    assert gated_metric("speculation.acceptance_rate").metric.judged == "sampled"
    assert gated_metric("error_rate").metric.judged == "exact" and gated_metric("tpot_ms.p90").metric.judged == "timing"
    with pytest.raises(ValueError, match="not a gateable metric"):
        gated_metric("tok_per_joule")
    for name in ("duration_s", "ttft_ms", "speculation.per_position"):  # no direction; a distribution; a vector
        with pytest.raises(ValueError, match="not a gateable metric"):
            gated_metric(name)
    assert [gated_metric(name).name for name in GATED_METRICS] == list(GATED_METRICS)


def test_launch_values_read_each_pooled_launch() -> None:
    pooled = combine_launches([summary(400.0, 10.0), summary(500.0, 8.0)])
    assert gated_metric("output_throughput").launch_values(pooled) == [400.0, 500.0]
    assert gated_metric("output_throughput").launch_values(summary(450.0, 9.0)) == [450.0]
    assert "tpot_ms.median" in GATEABLE and "tpot_ms" not in GATEABLE
