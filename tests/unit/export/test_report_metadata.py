"""The harness's extras in a report: each block copied from what the run stored, left out where it stored nothing,
and the verdicts on the cell kept off the reports of its single launches."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.export import stored_cells
from harness.export.report_metadata import CellIdentity, HarnessMetadata, harness_metadata
from harness.telemetry import not_available, write_telemetry

from tests.support.exported_run import StoredRun


def test_the_extras_of_a_judged_predicted_cell_with_telemetry(run: StoredRun) -> None:
    single, *_ = stored_cells(run.plan, run.store)[0]
    extras = harness_metadata(single)
    assert extras.harness.cell_id == run.single.cell_id and extras.harness.launch is None
    assert extras.harness.harness_version == "0.1.0" and extras.harness.harness_commit == "c0ffee"
    assert extras.parity is not None and extras.parity.passed is True and extras.parity.delta_pp == -0.4
    assert extras.prediction is not None and extras.prediction.predictor == "aiconfigurator"
    ratios = extras.prediction.measured_over_predicted
    assert ratios is not None
    assert ratios["output_throughput"] == pytest.approx(800.0 / 1000.0)
    assert ratios["tpot_ms.median"] == pytest.approx(20.0 / 25.0)
    assert extras.gate is not None and extras.gate.verdict == "PASS"
    assert [(f.metric, f.status, f.ratio) for f in extras.gate.figures] == [("output_throughput", "ok", 1.01)]
    assert extras.power is not None and extras.power.tok_s_per_mw == 200000.0 and extras.power.note is None
    assert extras.server is not None and extras.server.counters == {"vllm:num_preemptions": 0.0}
    assert extras.speculation is None  # speculation off: no counters to state


def test_a_declined_prediction_and_speculation_on_the_cell_of_several_launches(run: StoredRun) -> None:
    _, pooled, *launches = stored_cells(run.plan, run.store)[0]
    extras = harness_metadata(pooled)
    assert extras.prediction is not None and extras.prediction.declined == "no MTP data for this GPU"
    assert extras.prediction.measured_over_predicted is None
    assert extras.speculation is not None and extras.speculation.counters is not None
    assert extras.speculation.counters.acceptance_rate == pytest.approx(0.7)
    assert extras.gate is not None and extras.gate.figures == ()  # the gate has no row for it
    assert extras.power is None and extras.parity is None
    assert extras.spread is not None and extras.harness.launches == 3
    for k, launch in enumerate(launches):
        own = harness_metadata(launch)
        assert own.harness.launch == k and own.harness.launches == 1
        assert own.gate is None and own.parity is None and own.power is None and own.spread is None


def test_telemetry_without_nvml_states_no_power(run: StoredRun) -> None:
    write_telemetry(not_available("no NVML on this machine"), run.store.telemetry_path(run.single))
    single, *_ = stored_cells(run.plan, run.store)[0]
    assert harness_metadata(single).power is None


def test_the_export_page_names_every_block() -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "export.md").read_text()
    blocks = page.split("### The harness's extras")[1].split("### What is left out")[0]
    assert not [name for name in HarnessMetadata.model_fields if f"| `{name}` |" not in blocks]
    assert not [name for name in CellIdentity.model_fields if f"`{name}`" not in blocks]
