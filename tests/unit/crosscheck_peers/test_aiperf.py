"""AIPerf's entry: the argv asks ``aiperf profile`` for the cross-check's workload, and the stored summary export of a
real run reads back as the figures AIPerf printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.crosscheck_peers import peer_client

from tests.support.peer_runs import DATA, flags, peer_spec


def test_argv_asks_for_the_same_workload(tmp_path: Path) -> None:
    peer = peer_client("aiperf")
    argv = peer.argv(peer_spec(tmp_path / "peers"), 1, tmp_path / "run")
    assert argv[:2] == [str(tmp_path / "peers" / "aiperf" / "bin" / "aiperf"), "profile"]
    f = flags(argv)
    assert (f["--endpoint-type"], f["--streaming"], f["--url"], f["--model"]) == ("completions", True,
                                                                                  "http://127.0.0.1:18123", "m")
    assert (f["--isl"], f["--osl"], f["--random-range-ratio"], f["--random-corpus-style"]) == ("32", "16", "0.2",
                                                                                                 "vllm")
    assert (f["--concurrency"], f["--request-count"], f["--num-dataset-entries"]) == ("2", "8", "8")
    assert f["--random-seed"] == "2004" and f["--tokenizer"] == "/models/tok" and f["--use-server-token-count"]
    assert json.loads(str(f["--extra-inputs"])) == {"ignore_eos": True, "temperature": 0.0}
    assert f["--prompt-corpus"] == "random" and "--warmup-request-count" not in f
    assert Path(str(f["--output-artifact-dir"])) / "profile_export_aiperf.json" == tmp_path / "run" / peer.result_file


def test_the_stored_export_reads_as_aiperf_printed_it() -> None:
    figures = peer_client("aiperf").figures(DATA / "aiperf" / "profile_export_aiperf.json", 0)
    # its console: TTFT avg 29.81 p50 27.07, Inter Token Latency p50 5.72, Output Token Throughput 113.34, 8 requests
    assert (figures.client, figures.round, figures.completed, figures.failed) == ("aiperf", 0, 8, 0)
    assert figures.median_ttft_ms == pytest.approx(27.07, abs=0.005)
    assert figures.mean_ttft_ms == pytest.approx(29.81, abs=0.005)
    assert figures.median_tpot_ms == pytest.approx(5.72, abs=0.005)
    assert figures.output_throughput == pytest.approx(113.34, abs=0.005)
    assert figures.mean_itl_ms == pytest.approx(7.017, abs=0.001)  # inter_chunk_latency avg (not on its console)


def test_failed_requests_are_its_error_count(tmp_path: Path) -> None:
    data = json.loads((DATA / "aiperf" / "profile_export_aiperf.json").read_text())
    data["error_request_count"] = {"unit": "requests", "avg": 3.0}
    (tmp_path / "export.json").write_text(json.dumps(data))
    assert peer_client("aiperf").figures(tmp_path / "export.json", 2).failed == 3
