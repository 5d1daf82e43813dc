"""A stored run as Benchmark Reports: every file valid against llm-d's published JSON Schema, every figure the run
measured in its field with its unit, nothing it did not measure."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from harness.export import cell_report, stored_cells
from harness.export.br_export import BR_FILE_PREFIX, report_path, write_reports

from tests.support.exported_run import COMMAND, ENGINE_VERSION, GPU_NAME, PROMPTS, StoredRun


def _written(run: StoredRun, dest: Path) -> dict[str, dict[str, Any]]:
    cells, _ = stored_cells(run.plan, run.store)
    paths = write_reports(cells, dest)
    return {p.name.removeprefix(BR_FILE_PREFIX).removesuffix(".yaml"): yaml.safe_load(p.read_text()) for p in paths}


def test_every_exported_report_validates_against_the_published_schema(
        run: StoredRun, tmp_path: Path, br_validator: Draft202012Validator) -> None:
    reports = _written(run, tmp_path / "export")
    cid, lid = run.single.cell_id, run.launched.cell_id
    # one per measured cell, and one per launch of the cell measured on three; none for the failed or unrun cell
    assert sorted(reports) == sorted([cid, lid, *(f"{lid}_launch{k}" for k in range(3))])
    for name, report in reports.items():
        errors = sorted(br_validator.iter_errors(report), key=str)
        assert not errors, f"{name}: {[e.message for e in errors]}"
        assert report["version"] == "0.2.1"


def test_the_validation_catches_a_report_the_schema_refuses(run: StoredRun, tmp_path: Path,
                                                            br_validator: Draft202012Validator) -> None:
    report = _written(run, tmp_path / "export")[run.single.cell_id]
    for path, value in ((("results", "request_performance", "aggregate", "latency", "time_to_first_token", "units"),
                         "minutes"),
                        (("run", "time", "start"), "yesterday"),
                        (("scenario", "stack", 0, "standardized", "role"), "router")):
        broken: Any = copy.deepcopy(report)
        where = broken
        for key in path[:-1]:
            where = where[key]
        where[path[-1]] = value
        assert not br_validator.is_valid(broken), path
    extra = copy.deepcopy(report)
    extra["results"]["request_performance"]["aggregate"]["latency"]["tail"] = {"units": "ms", "mean": 1.0}
    assert not br_validator.is_valid(extra)


def test_measured_figures_are_in_their_fields_with_their_units(run: StoredRun, tmp_path: Path) -> None:
    report = _written(run, tmp_path / "export")[run.single.cell_id]
    summary = run.store.read_result(run.single)
    assert summary is not None and summary.summary is not None
    s = summary.summary
    aggregate = report["results"]["request_performance"]["aggregate"]
    assert aggregate["requests"]["total"] == s.requests and aggregate["requests"]["failures"] == s.failed
    ttft = aggregate["latency"]["time_to_first_token"]
    assert ttft["units"] == "ms" and s.ttft_ms is not None
    assert (ttft["mean"], ttft["stddev"], ttft["p50"], ttft["p90"], ttft["p99"], ttft["p99p9"]) == (
        s.ttft_ms.mean, s.ttft_ms.std, s.ttft_ms.median, s.ttft_ms.p90, s.ttft_ms.p99, s.ttft_ms.p99_9)
    assert aggregate["latency"]["time_per_output_token"]["units"] == "ms/token"
    assert aggregate["latency"]["inter_token_latency"]["units"] == "ms/token"
    assert aggregate["latency"]["request_latency"]["units"] == "ms"
    throughput = aggregate["throughput"]
    assert throughput["output_token_rate"] == {"units": "tokens/s", "mean": s.output_throughput}
    assert throughput["request_rate"] == {"units": "queries/s", "mean": s.request_throughput}
    assert throughput["input_token_rate"]["mean"] == pytest.approx(s.total_token_throughput - s.output_throughput)
    # lengths come from the measured, completed records: the warm-up's 99 tokens and the failure are not in them
    inputs = aggregate["requests"]["input_length"]
    assert inputs["units"] == "count" and inputs["mean"] == sum(PROMPTS) / len(PROMPTS)
    assert (inputs["min"], inputs["max"]) == (min(PROMPTS), max(PROMPTS))
    assert aggregate["requests"]["output_length"]["mean"] == 8
    observed = report["results"]["observability"]["components"][0]
    assert observed["component_label"] == report["scenario"]["stack"][0]["metadata"]["label"]
    assert observed["aggregate"]["cache_hit_rate"] == {"units": "fraction", "mean": 0.25}
    assert observed["aggregate"]["power_consumption"] == {"units": "Watts", "mean": 4000.0}
    assert observed["aggregate"]["gpu_utilization"] == {"units": "percent", "mean": 70.0}


def test_the_scenario_names_engine_machine_command_and_load(run: StoredRun, tmp_path: Path) -> None:
    report = _written(run, tmp_path / "export")[run.single.cell_id]
    (engine,) = report["scenario"]["stack"]
    standardized = engine["standardized"]
    assert standardized["kind"] == "inference_engine" and standardized["tool"] == "vllm"
    assert standardized["tool_version"] == ENGINE_VERSION and standardized["role"] == "replica"
    assert standardized["accelerator"] == {"model": GPU_NAME, "count": 8, "parallelism": {"tp": 1, "dp": 1, "ep": 1}}
    assert standardized["model"] == {"name": "fixture:tiny-qwen3-moe"}
    assert engine["metadata"]["cfg_id"] == run.single.server.server_id
    native = engine["native"]
    assert native["config"]["command"] == COMMAND and native["config"]["model"]["weights"] == "bf16"
    assert native["args"]["--tensor-parallel-size"] == "8" and native["args"]["--enforce-eager"] is None
    load = report["scenario"]["load"]["standardized"]
    assert load["tool"] == "harness" and load["concurrency"] == 1 and load["source"] == "random"
    assert load["input_seq_len"]["distribution"] == "other"  # the lengths sent varied
    assert load["output_seq_len"] == {"distribution": "fixed", "value": 8}  # ignore_eos: the length is enforced
    assert report["scenario"]["load"]["native"]["config"]["kind"] == "random"
    assert report["run"]["description"] == run.single.label
    assert report["run"]["time"]["duration"] == "PT30S"


def test_what_was_not_measured_is_left_out(run: StoredRun, tmp_path: Path) -> None:
    reports = _written(run, tmp_path / "export")
    single = reports[run.single.cell_id]
    latency = single["results"]["request_performance"]["aggregate"]["latency"]
    assert "normalized_time_per_output_token" not in latency
    assert not {"p95", "p25", "mode"} & set(latency["time_to_first_token"])  # the harness computes none of them
    assert set(single["results"]) == {"request_performance", "observability"}  # no sessions, time series, health
    assert not {"cid", "pid", "user", "keywords"} & set(single["run"])
    assert "multi_turn" not in single["scenario"]["load"]["standardized"]
    assert "rate_qps" not in single["scenario"]["load"]["standardized"]  # fixed concurrency, no request rate
    # the cell measured on several launches has no telemetry: no power, no utilisation anywhere
    pooled = reports[run.launched.cell_id]
    assert "components" not in pooled["results"]["observability"]
    assert "power" not in pooled["results"]["observability"]["metadata"]


def test_a_cell_measured_on_several_launches_reports_the_pooled_figures_and_each_launch(
        run: StoredRun, tmp_path: Path) -> None:
    reports = _written(run, tmp_path / "export")
    pooled = reports[run.launched.cell_id]
    rate = pooled["results"]["request_performance"]["aggregate"]["throughput"]["output_token_rate"]["mean"]
    assert rate == pytest.approx(1600.0)  # the median of the three launches
    assert pooled["results"]["observability"]["metadata"]["harness"]["launches"] == 3
    assert "output_throughput" in pooled["results"]["observability"]["metadata"]["spread"]
    for k, own in enumerate(run.launch_summaries):
        report = reports[f"{run.launched.cell_id}_launch{k}"]
        figures = report["results"]["request_performance"]["aggregate"]["throughput"]["output_token_rate"]
        assert figures["mean"] == pytest.approx(own.output_throughput)
        assert report["results"]["observability"]["metadata"]["harness"]["launch"] == k
        assert report["run"]["uid"] != pooled["run"]["uid"] and report["run"]["eid"] == pooled["run"]["eid"]
        assert "gate" not in report["results"]["observability"]["metadata"]  # the gate judges the pooled cell


def test_a_report_is_named_as_llm_d_names_its_own_and_round_trips_the_model(run: StoredRun) -> None:
    cells, _ = stored_cells(run.plan, run.store)
    report = cell_report(cells[0])
    # llm-d-benchmark's analysis globs benchmark_report_v0.2,_*.yaml
    assert report_path(Path("x"), cells[0]).name == f"benchmark_report_v0.2,_{run.single.cell_id}.yaml"
    assert type(report).model_validate(report.dump()) == report
    with pytest.raises(ValueError):
        type(report).model_validate({**report.dump(), "metrics": {}})  # version 0.1's block, not 0.2's
