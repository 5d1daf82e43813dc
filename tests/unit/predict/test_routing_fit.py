"""A run's measured routing fitted to AIConfigurator's bounded power law: the fit recovers a known alpha, its interval
narrows with more experts, the nearest tabled distribution is chosen and the doubt stated, and the prediction says it
used it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.predict.aiconfigurator_tables import ROUTINGS
from harness.predict.routing_fit import TABLED, fit, fit_alpha, measured_routing
from harness.servers.expert_load_collectors import ExpertCounts
from harness.telemetry import ExpertLoadRecord


def power_law(alpha: float, n: int, seed: int = 0, low: float = 1.0, high: float = 100.0) -> np.ndarray:
    """``n`` draws of AIConfigurator's bounded power law (its inverse-CDF sampling)."""
    u = np.random.default_rng(seed).uniform(size=n)
    return ((high ** (1 - alpha) - low ** (1 - alpha)) * u + low ** (1 - alpha)) ** (1 / (1 - alpha))


def test_the_tables_are_the_ones_aiconfigurator_holds() -> None:
    assert set(TABLED) == set(ROUTINGS)


@pytest.mark.parametrize("alpha", [0.3, 1.2, 1.8])
def test_the_fit_recovers_a_known_alpha(alpha: float) -> None:
    assert fit_alpha(power_law(alpha, 4000)) == pytest.approx(alpha, abs=0.08)


def test_equal_loads_are_balanced_and_the_interval_narrows_with_more_experts() -> None:
    assert fit_alpha(np.full(16, 7.0)) == 0.0
    few, many = fit(power_law(1.2, 16), "few"), fit(power_law(1.2, 1024), "many")
    assert many.interval[1] - many.interval[0] < few.interval[1] - few.interval[0]
    assert many.routing == "power_law_1.2" and many.interval[0] < 1.2 < many.interval[1]
    assert "power_law_1.2: measured in many" in many.stated()


def test_the_doubt_is_said() -> None:
    wide = fit(power_law(1.1, 12, seed=3), "r")
    assert len(wide.ruled_in) > 1 and "does not rule out" in wide.stated()
    narrow = fit(power_law(0.5, 4000), "r")
    assert narrow.ruled_in == () and "none of AIConfigurator's tables lies inside" in narrow.stated()


def test_a_run_directory_is_read_and_pooled(tmp_path: Path) -> None:
    rows = power_law(1.2, 256, seed=1).round().astype(int) + 1
    for cell, launch in (("a", None), ("b", 0), ("b", 1)):
        where = tmp_path / "runs" / cell / ("launches/" + str(launch) if launch is not None else "")
        where.mkdir(parents=True, exist_ok=True)
        counts = ExpertCounts(collector="c", layers=(0,), experts=256, top_k=8, counts=(tuple(int(v) for v in rows),),
                              rows=(int(rows.sum()) // 8,))
        (where / "expert_load.json").write_text(ExpertLoadRecord(
            label=cell, counts=counts, expected_rows=1, requests=1, measured_s=1.0).model_dump_json())
    found = measured_routing(str(tmp_path))
    assert found is not None and found.samples == 3 * 256 and found.routing == "power_law_1.2"
    assert measured_routing(str(tmp_path / "nothing")) is None
