"""inference-perf's entry: the argv asks ``inference-perf`` for the cross-check's workload with flags alone, and the
stored summary report of a real run reads back as the figures inference-perf printed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from harness.crosscheck_peers import peer_client

from tests.support.peer_runs import DATA, flags, peer_spec


def test_argv_asks_for_the_same_workload(tmp_path: Path) -> None:
    peer = peer_client("inference-perf")
    argv = peer.argv(peer_spec(tmp_path / "peers"), 0, tmp_path / "run")
    assert argv[0] == str(tmp_path / "peers" / "inference-perf" / "bin" / "inference-perf")
    f = flags(argv)
    assert (f["--api.type"], f["--api.streaming"], f["--server.ignore_eos"]) == ("completion", "true", "true")
    assert (f["--server.base_url"], f["--server.model_name"]) == ("http://127.0.0.1:18123", "m")
    assert f["--tokenizer.pretrained_model_name_or_path"] == "/models/tok" and f["--data.type"] == "random"
    assert [f[f"--data.input_distribution.{k}"] for k in ("type", "min", "max", "mean", "total_count")] == [
        "uniform", "25", "39", "32", "8"]
    assert [f[f"--data.output_distribution.{k}"] for k in ("type", "min", "max", "mean", "total_count")] == [
        "uniform", "12", "20", "16", "8"]
    assert f["--load.type"] == "concurrent" and f["--load.base_seed"] == "1004"
    assert json.loads(str(f["--load.stages"])) == [{"num_requests": 8, "concurrency_level": 2}]
    assert f["--report.request_lifecycle.use_server_output_tokens"] == "true"
    assert Path(str(f["--storage.local_storage.path"])) / peer.result_file == tmp_path / "run" / peer.result_file


def test_without_a_range_the_lengths_are_fixed(tmp_path: Path) -> None:
    f = flags(peer_client("inference-perf").argv(peer_spec(tmp_path, range_ratio=0.0), 0, tmp_path))
    assert (f["--data.input_distribution.type"], f["--data.input_distribution.min"]) == ("fixed", "32")


def test_the_stored_report_reads_as_inference_perf_printed_it() -> None:
    figures = peer_client("inference-perf").figures(DATA / "inference-perf" / "summary_lifecycle_metrics.json", 0)
    # its console: TTFT mean 22.4 median 22.1, ITL mean 1.8, TPOT median 5.0, output tokens/s 129.3, 8 successes
    assert (figures.client, figures.completed, figures.failed) == ("inference-perf", 8, 0)
    assert figures.median_ttft_ms == pytest.approx(22.1, abs=0.05)
    assert figures.mean_ttft_ms == pytest.approx(22.4, abs=0.05)
    assert figures.median_tpot_ms == pytest.approx(5.0, abs=0.05)
    assert figures.mean_itl_ms == pytest.approx(1.8, abs=0.05)  # per-token gaps: zeros inside multi-token chunks
    assert figures.output_throughput == pytest.approx(129.3, abs=0.05)


def test_a_run_where_nothing_succeeded_reads_as_nan(tmp_path: Path) -> None:
    data = json.loads((DATA / "inference-perf" / "summary_lifecycle_metrics.json").read_text())
    data["successes"]["latency"] = {name: None for name in data["successes"]["latency"]}
    (tmp_path / "summary.json").write_text(json.dumps(data))
    figures = peer_client("inference-perf").figures(tmp_path / "summary.json", 0)
    assert math.isnan(figures.median_ttft_ms) and math.isnan(figures.mean_itl_ms)
