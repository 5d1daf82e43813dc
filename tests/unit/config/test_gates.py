"""The gate's settings: the figures it gates by default, the bounds on its tolerance and history rule."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harness.config.gates import GATED_METRICS, GateSpec, HistorySpec


def test_the_defaults_gate_the_headline_figures_with_the_history_rule_on() -> None:
    gate = GateSpec()
    assert gate.metrics == GATED_METRICS and "output_throughput" in gate.metrics
    assert (gate.tolerance, gate.machine_speed, gate.speed_exponent, gate.baseline) == (0.10, "guard", 3.0, None)
    assert gate.history == HistorySpec() and gate.history.use
    assert (gate.history.recent, gate.history.persist, gate.history.flat_runs) == (4, 2, 8)


@pytest.mark.parametrize("bad", [{"tolerance": 0}, {"tolerance": 1}, {"machine_speed": "scale"},
                                 {"speed_exponent": 11}, {"metrics": []}, {"history": {"max_pvalue": 0.5}},
                                 {"history": {"flat_runs": 2}}, {"history": {"recent": 0}}])
def test_settings_outside_their_bounds_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        GateSpec.model_validate(bad)


def test_a_gate_section_parses_nested_history() -> None:
    gate = GateSpec.model_validate({"tolerance": 0.2, "metrics": ["ttft_ms.p99"], "history": {"use": False}})
    assert gate.metrics == ("ttft_ms.p99",) and not gate.history.use and gate.history.max_pvalue == 0.005
