"""GuideLLM's entry: the argv asks ``guidellm run`` for the cross-check's workload, and the stored JSON output of a
real run reads back as the figures GuideLLM printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.crosscheck_peers import peer_client

from tests.support.peer_runs import DATA, flags, peer_spec


def _options(value: str | bool) -> dict[str, str]:
    """GuideLLM's ``kind=...,key=value`` option, as a dict."""
    return dict(pair.split("=", 1) for pair in str(value).split(","))


def test_argv_asks_for_the_same_workload(tmp_path: Path) -> None:
    peer = peer_client("guidellm")
    argv = peer.argv(peer_spec(tmp_path / "peers", concurrency=4), 0, tmp_path / "run")
    assert argv[:2] == [str(tmp_path / "peers" / "guidellm" / "bin" / "guidellm"), "run"]
    f = flags(argv)
    backend = _options(f["--backend"])
    assert backend == {"kind": "openai_http", "target": "http://127.0.0.1:18123", "model": "m",
                       "request_format": "/v1/completions", "stream": "true", "http2": "false", "timeout": "60.0",
                       "extras.body.temperature": "0.0"}
    assert _options(f["--data"]) == {"kind": "synthetic_text", "prompt_tokens": "32", "prompt_tokens_min": "25",
                                     "prompt_tokens_max": "39", "output_tokens": "16", "output_tokens_min": "12",
                                     "output_tokens_max": "20"}
    assert _options(f["--profile"]) == {"kind": "concurrent", "streams": "4"}
    assert _options(f["--constraint"]) == {"kind": "max_requests", "count": "8"}
    assert _options(f["--seed"]) == {"kind": "static", "value": "1004"}
    assert _options(f["--tokenizer"]) == {"kind": "hf_auto", "model": "/models/tok"}
    assert _options(f["--output"]) == {"kind": "json", "path": str(tmp_path / "run" / peer.result_file)}


def test_the_stored_output_reads_as_guidellm_printed_it() -> None:
    figures = peer_client("guidellm").figures(DATA / "guidellm" / "benchmarks.json", 1)
    # its console: TTFT mean 23.4 median 21.5, ITL mean 5.0 median 5.0, output tokens/s 293.6, 8 successful
    assert (figures.client, figures.round, figures.completed, figures.failed) == ("guidellm", 1, 8, 0)
    assert figures.median_ttft_ms == pytest.approx(21.5, abs=0.05)
    assert figures.mean_ttft_ms == pytest.approx(23.4, abs=0.05)
    assert figures.median_tpot_ms == pytest.approx(5.0, abs=0.05)
    assert figures.mean_itl_ms == pytest.approx(5.0, abs=0.05)
    assert figures.output_throughput == pytest.approx(293.6, abs=0.05)


def test_failed_requests_are_its_errored_and_incomplete(tmp_path: Path) -> None:
    data = json.loads((DATA / "guidellm" / "benchmarks.json").read_text())
    data["benchmarks"][0]["metrics"]["request_totals"].update(errored=2, incomplete=1)
    (tmp_path / "benchmarks.json").write_text(json.dumps(data))
    assert peer_client("guidellm").figures(tmp_path / "benchmarks.json", 0).failed == 3
