"""vLLM's entry: ``vllm.benchmarks.serve`` under the server's interpreter, asked for the same workload (its flags
are checked against its own parser in tests/integration/test_crosscheck_vllm.py), and its stored result JSON read
back as it printed it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.crosscheck_peers import peer_client

from tests.support.peer_runs import DATA, flags, peer_spec


def test_argv_runs_its_module_under_the_servers_interpreter(tmp_path: Path) -> None:
    peer = peer_client("vllm")
    argv = peer.argv(peer_spec(tmp_path / "peers"), 0, tmp_path)
    assert argv[:2] == ["/engines/vllm/bin/python", "-c"]
    assert "from vllm.benchmarks.serve import add_cli_args, main" in argv[2]
    f = flags(argv[3:])
    for flag in ("--ignore-eos", "--disable-tqdm", "--save-result"):
        assert f[flag] is True
    assert (f["--random-input-len"], f["--random-output-len"], f["--random-range-ratio"]) == ("32", "16", "0.2")
    assert (f["--num-prompts"], f["--max-concurrency"], f["--seed"], f["--num-warmups"]) == ("8", "2", "1004", "0")
    assert Path(str(f["--result-dir"])) / str(f["--result-filename"]) == tmp_path / peer.result_file


def test_the_stored_result_reads_as_vllm_printed_it() -> None:
    figures = peer_client("vllm").figures(DATA / "vllm" / "result.json", 0)
    # its console: Median TTFT 23.94, Mean TTFT 26.54, Median TPOT 5.02, Mean ITL 4.93, 319.83 tok/s, 8 ok, 0 failed
    assert (figures.client, figures.completed, figures.failed) == ("vllm", 8, 0)
    assert figures.median_ttft_ms == pytest.approx(23.94, abs=0.005)
    assert figures.mean_ttft_ms == pytest.approx(26.54, abs=0.005)
    assert figures.median_tpot_ms == pytest.approx(5.02, abs=0.005)
    assert figures.mean_itl_ms == pytest.approx(4.93, abs=0.005)
    assert figures.output_throughput == pytest.approx(319.83, abs=0.005)
