"""The ceiling's pure parts (``tools/client_bench/ceiling.py``): the round-robin order, the table built from runs,
the CPU count of a command and everything it started, our client behind a peer's interface, and the skipping of a
peer that is not installed. No peer is needed: none is run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.crosscheck_peers import PEER_CLIENTS
from tools.client_bench import CeilingRun, build_rows, markdown_table, round_order, run_counted
from tools.client_bench.ceiling import OurClient, installed, known_clients, ratios_to, spec_for, to_json


def test_each_round_starts_one_client_later_so_every_client_takes_every_slot() -> None:
    clients = ["ours", "aiperf", "vllm"]
    orders = [round_order(clients, r) for r in range(4)]
    assert orders == [["ours", "aiperf", "vllm"], ["aiperf", "vllm", "ours"], ["vllm", "ours", "aiperf"],
                      ["ours", "aiperf", "vllm"]]
    assert {order[0] for order in orders[:3]} == set(clients)
    assert round_order([], 3) == []


def run(client: str, concurrency: int, round_: int, tok_s: float, tokens: int, cpu_s: float,
        failed: int = 0) -> CeilingRun:
    return CeilingRun(client, concurrency, round_, False, tok_s, tokens, cpu_s, wall_s=1.0, completed=4,
                      failed=failed)


def startup(client: str, concurrency: int, round_: int, cpu_s: float) -> CeilingRun:
    return CeilingRun(client, concurrency, round_, True, 5.0, 4, cpu_s, wall_s=1.0, completed=4, failed=0)


RUNS = [
    startup("ours", 64, 0, 0.5), run("ours", 64, 0, 1000, 6000, 1.5),
    startup("vllm", 64, 0, 4.0), run("vllm", 64, 0, 400, 6000, 8.0, failed=1),
    startup("vllm", 64, 1, 6.0), run("vllm", 64, 1, 500, 6000, 9.0),
    startup("ours", 64, 1, 0.7), run("ours", 64, 1, 1200, 6000, 3.6),
    startup("ours", 16, 0, 9.0),  # another concurrency's startup: not subtracted at 64
]


def test_rows_hold_medians_over_rounds_and_net_of_the_median_startup() -> None:
    rows = build_rows(RUNS, {("ours", 64): 0.04})
    assert [(r.client, r.concurrency, r.rounds) for r in rows] == [("ours", 64, 2), ("vllm", 64, 2)]
    ours, vllm = rows
    assert ours.tok_s == 1100 and ours.tok_s_spread == (1000, 1200)
    assert ours.startup_cpu_s == pytest.approx(0.6) and vllm.startup_cpu_s == 5.0
    assert ours.tok_per_cpu_s == pytest.approx((6000 / 1.5 + 6000 / 3.6) / 2)
    assert ours.net_spread == pytest.approx((6000 / 3.0, 6000 / 0.9))  # 6000 / (cpu - 0.6)
    assert vllm.tok_per_net_cpu_s == pytest.approx((6000 / 3 + 6000 / 4) / 2)
    assert (ours.p99_stamp_ms, vllm.p99_stamp_ms) == (0.04, None) and vllm.failed == 1
    assert ours.tok_per_net_cpu_s is not None and vllm.tok_per_net_cpu_s is not None
    assert ratios_to(rows, "vllm") == {64: pytest.approx(ours.tok_per_net_cpu_s / vllm.tok_per_net_cpu_s)}


def test_a_client_without_a_startup_run_or_one_not_above_it_has_no_net_figure() -> None:
    rows = build_rows([run("aiperf", 16, 0, 100, 1000, 2.0), startup("aiperf", 64, 0, 1.0),
                       startup("guidellm", 16, 0, 3.0), run("guidellm", 16, 0, 100, 1000, 2.5)])
    assert [(r.client, r.tok_per_net_cpu_s, r.net_spread) for r in rows] == [("aiperf", None, None),
                                                                           ("guidellm", None, None)]
    assert ratios_to(rows, "aiperf") == {}


def test_the_markdown_table_has_a_row_per_cell_and_says_n_a_where_nothing_was_measured() -> None:
    table = markdown_table(build_rows(RUNS, {("ours", 64): 0.04}))
    lines = table.splitlines()
    assert len(lines) == 4 and lines[0].startswith("| client | conc |")
    assert {len(line.split("|")) for line in lines} == {14}
    assert lines[2].startswith("| ours | 64 | 2 | 1,100 | 1,000-1,200 |") and "| 0.040 |" in lines[2]
    assert lines[3].startswith("| vllm | 64 |") and lines[3].endswith("| n/a | 1 |")


def test_the_json_holds_every_run_and_row() -> None:
    data = json.loads(to_json(build_rows(RUNS), RUNS, {"rounds": 2}))
    assert data["rounds"] == 2 and len(data["runs"]) == len(RUNS) and len(data["rows"]) == 2


BUSY = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end: pass\n"


def test_the_cpu_count_holds_the_command_and_a_descendant_it_orphaned() -> None:
    # the child starts a grandchild that burns 0.3 CPU-s and exits at once without waiting for it: the subreaper
    # still reaps the grandchild and counts it
    grandchild = BUSY.format(s=0.3)
    child = (f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {grandchild!r}])\n"
             + BUSY.format(s=0.2))
    counted = run_counted([sys.executable, "-c", child], timeout_s=60)
    assert counted.rc == 0 and counted.left_running == 0
    assert counted.cpu_s >= 0.5 and counted.wall_s > 0


def test_a_failed_command_keeps_its_exit_code_and_output() -> None:
    counted = run_counted([sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"], timeout_s=60)
    assert counted.rc == 3 and "boom" in counted.output


def test_our_client_has_a_peers_argv_and_reads_its_result_file(tmp_path: Path) -> None:
    spec = spec_for("http://127.0.0.1:9", tmp_path, "ours", concurrency=16, requests=64, tokens=128)
    argv = OurClient().argv(spec, 0, tmp_path)
    assert argv[1:5] == ["-m", "tools.client_bench", "--worker", "ours"]
    assert argv[argv.index("--c") + 1] == "16" and argv[argv.index("--requests") + 1] == "64"
    assert argv[argv.index("--tokens") + 1] == "128"
    assert argv[argv.index("--result-file") + 1] == str(tmp_path / OurClient.result_file)
    (tmp_path / OurClient.result_file).write_text(json.dumps(
        {"tok_s": 900.0, "tok_per_cpu_s": 1.0, "completed": 64, "failed": 0, "lags_ms": []}))
    figures = OurClient().figures(tmp_path / OurClient.result_file, 1)
    assert (figures.client, figures.round, figures.output_throughput, figures.completed) == ("ours", 1, 900.0, 64)


def test_a_peer_not_installed_is_skipped_with_a_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert known_clients()[0] == "ours" and set(known_clients()[1:]) == set(PEER_CLIENTS.names())
    ready = installed(["ours", "vllm", "aiperf"], peers_dir=tmp_path)  # an empty peers folder: nothing installed
    assert ready == ["ours", "vllm"]  # vLLM's client runs under the harness's interpreter
    assert "skipped aiperf:" in capsys.readouterr().out
