"""The whole pipeline through the CLI, against the fake server launched as a real subprocess.

The fake server is a test instrument: it makes start-up failures, crashes mid-cell and Ctrl-C cheap to provoke,
so the lifecycle guarantees are checked on every `make test`. The same guarantees on a real vLLM server are
checked in test_vllm_cpu.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import cli
from tests.support.processes import live_pids

pytestmark = pytest.mark.fake_engine

FAKE_MATRIX = """
name: fake
models:
  m: {{id: "{model}"}}
workloads:
  w: {{kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1}}
axes:
  runtime: [fake]
  speculation: ["off", {{method: mtp, k: 2}}]
  concurrency: [1, 2, 3]
server: {{startup_timeout_s: 60}}
runtimes: {{fake: {{extra_args: [{extra}]}}}}
"""


def harness(*args: str, out: Path) -> subprocess.CompletedProcess[str]:
    """The command in-process (tests/support/cli.py): what is tested is the pipeline, not the executable."""
    return cli.harness(*args, "--out", out)


def results(out: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    found = {}
    for path in sorted((out / "fake" / "runs").glob("*/summary.json")):
        data = json.loads(path.read_text())
        found[data["label"]] = data
    return found


@pytest.fixture
def fake_matrix(write_matrix: Callable[..., Path], tiny_tokenizer_dir: Path) -> Callable[[str], Path]:
    return lambda extra="": write_matrix(FAKE_MATRIX.format(model=tiny_tokenizer_dir, extra=extra))


def test_run_report_and_resume(fake_matrix: Callable[[str], Path], tmp_path: Path) -> None:
    matrix, out = fake_matrix(""), tmp_path / "reports"
    first = harness("run", str(matrix), out=out)
    assert first.returncode == 0, first.stderr
    assert "6 cells run, 0 failed" in first.stdout
    found = results(out)
    assert len(found) == 6 and all(r["status"] == "ok" for r in found.values())
    spec = found["m/fake/bf16/tp1/mtp2/w/c2"]["summary"]["speculation"]
    assert spec["draft_tokens"] > 0 and 0 < spec["acceptance_rate"] < 1
    assert found["m/fake/bf16/tp1/off/w/c2"]["summary"]["speculation"] is None
    cell_dir = next((out / "fake" / "runs").iterdir())
    assert {p.name for p in cell_dir.iterdir()} == {"cell.json", "records.jsonl", "server.log", "summary.json",
                                                    "telemetry.json"}
    telemetry = json.loads((cell_dir / "telemetry.json").read_text())
    assert telemetry["available"] is False and "no GPU" in telemetry["reason"]  # measured or absent, never guessed
    report = (out / "fake" / "report.md").read_text()
    assert "## Speculative decoding beside its `off` pair" in report and "| m | fake | bf16 |" in report

    second = harness("run", str(matrix), out=out)
    assert second.returncode == 0 and "0 cells run, 0 failed, 6 already complete" in second.stdout
    forced = harness("run", str(matrix), "--force", out=out)
    assert "6 cells run" in forced.stdout
    assert not live_pids("harness_testing.fake_engine")


def test_server_that_fails_to_start(fake_matrix: Callable[[str], Path], tmp_path: Path) -> None:
    out = tmp_path / "reports"
    proc = harness("run", str(fake_matrix('"--fail-startup"')), out=out)
    assert proc.returncode == 1
    found = results(out)
    assert len(found) == 6 and all(r["status"] == "failed" for r in found.values())
    sample = next(iter(found.values()))
    assert "failed to start" in sample["reason"] and "--fail-startup was given" in sample["log_tail"]
    assert "## Failed cells" in (out / "fake" / "report.md").read_text()


def test_server_killed_mid_cell(fake_matrix: Callable[[str], Path], tmp_path: Path) -> None:
    # Each server takes 1 warm-up + 4 measured requests at c=1 and c=2, 1 + 6 at c=3; it dies on request 8,
    # inside the c=2 cell. That cell fails, c=1 keeps its result, and c=3 runs on a relaunched server.
    out = tmp_path / "reports"
    proc = harness("run", str(fake_matrix('"--die-after-requests", "7"')), out=out)
    assert proc.returncode == 1, proc.stderr
    found = results(out)
    for spec in ("off", "mtp2"):
        assert found[f"m/fake/bf16/tp1/{spec}/w/c1"]["status"] == "ok"
        assert found[f"m/fake/bf16/tp1/{spec}/w/c2"]["status"] == "failed"
        assert "exited while the cell ran" in found[f"m/fake/bf16/tp1/{spec}/w/c2"]["reason"]
        assert found[f"m/fake/bf16/tp1/{spec}/w/c3"]["status"] == "ok"
    assert not live_pids("harness_testing.fake_engine")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_keeps_finished_cells_and_leaves_no_server(
    fake_matrix: Callable[[str], Path], tmp_path: Path, signum: int
) -> None:
    out = tmp_path / "reports"
    matrix = fake_matrix('"--itl-ms", "40"')  # ~0.3 s per request: slow enough to interrupt mid-run
    # A shell without job control starts background commands with SIGINT ignored, and a child inherits that
    # (`make test &`, nohup): give the harness the disposition of a process started at a terminal.
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", str(matrix), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not results(out) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert results(out), "no cell finished in time"
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "rerun to resume" in stderr
    kept = {label for label, r in results(out).items() if r["status"] == "ok"}
    assert kept and len(kept) < 6
    assert not live_pids("harness_testing.fake_engine")

    resumed = harness("run", str(matrix), out=out)
    assert resumed.returncode == 0
    assert f"{6 - len(kept)} cells run, 0 failed, {len(kept)} already complete" in resumed.stdout
    assert os.path.exists(out / "fake" / "report.md")


REPEATED_MATRIX = """
name: fake
models:
  m: {{id: "{model}"}}
workloads:
  w: {{kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1}}
  tools: {{kind: tool-calls, tools_per_request: 2, output_tokens: 6, num_requests: 4, warmup_requests: 0}}
axes:
  runtime: [fake]
  concurrency: [2]
  request_rate: [.inf, 40]
repeats: 2
server: {{startup_timeout_s: 60}}
"""


def test_repeats_rates_and_server_view(write_matrix: Callable[..., Path], tiny_tokenizer_dir: Path,
                                      tmp_path: Path) -> None:
    out = tmp_path / "reports"
    proc = harness("run", str(write_matrix(REPEATED_MATRIX.format(model=tiny_tokenizer_dir))), out=out)
    assert proc.returncode == 0, proc.stderr
    found = results(out)
    assert set(found) == {"m/fake/bf16/tp1/off/w/c2", "m/fake/bf16/tp1/off/w/c2/r40",
                          "m/fake/bf16/tp1/off/tools/c2", "m/fake/bf16/tp1/off/tools/c2/r40"}
    for result in found.values():
        summary = result["summary"]
        assert result["status"] == "ok" and summary["requests"] == 8  # 2 repeats x 4
        assert [run["requests"] for run in summary["repeats"]] == [4, 4]
        spread = summary["spread"]
        assert spread["tpot_ms.median"]["values"] and len(spread["output_throughput"]["values"]) == 2
        assert summary["server"]["counters"]["vllm:generation_tokens"] == summary["total_output_tokens"]
        assert summary["client"]["cpu_util"] >= 0 and summary["output_throughput_per_gpu"] is None
    cell_dir = next(d for d in (out / "fake" / "runs").iterdir() if "r40" in json.loads(
        (d / "summary.json").read_text())["label"])
    records = [json.loads(line) for line in (cell_dir / "records.jsonl").read_text().splitlines()]
    assert sorted({r["repeat"] for r in records}) == [0, 1]
    assert sum(r["warmup"] for r in records) <= 1  # only the first repeat warms up


def test_a_cell_runs_again_until_its_minimum_is_measured(fake_matrix: Callable[[str], Path], tmp_path: Path) -> None:
    matrix = fake_matrix('"--itl-ms", "20"').read_text().replace('speculation: ["off", {method: mtp, k: 2}]',
                                                                 'speculation: ["off"]')
    matrix = matrix.replace("concurrency: [1, 2, 3]", "concurrency: [2]") + "min_measured_s: 1.5\n"
    path, out = tmp_path / "min.yaml", tmp_path / "reports"
    path.write_text(matrix)
    proc = harness("run", str(path), out=out)
    assert proc.returncode == 0, proc.stderr
    (result,) = results(out).values()
    runs = result["summary"]["repeats"]
    seconds = [run["duration_s"] for run in runs]
    assert len(runs) >= 2 and all(run["requests"] == 4 for run in runs)  # a run is the workload's 4 requests
    assert sum(seconds[:-1]) < 1.5 <= sum(seconds)  # it stopped at the first run that reached the minimum
    assert result["summary"]["requests"] == 4 * len(runs)


def test_an_unreadable_dataset_fails_before_any_launch(write_matrix: Callable[..., Path], tiny_tokenizer_dir: Path,
                                                        tmp_path: Path) -> None:
    matrix = FAKE_MATRIX.format(model=tiny_tokenizer_dir, extra="").replace(
        "w: {kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1}",
        f"w: {{kind: dataset, path: {tmp_path / 'missing.jsonl'}, output_tokens: 4}}")
    out = tmp_path / "reports"
    proc = harness("run", str(write_matrix(matrix)), out=out)
    assert proc.returncode == 2 and "workloads.w.path: " in proc.stderr and "missing.jsonl: no such file" in proc.stderr
    assert not (out / "fake" / "servers").exists()  # nothing was launched


def test_launches_interleave_resume_pool_and_gate(fake_matrix: Callable[[str], Path], tmp_path: Path) -> None:
    matrix, out, lock_dir = fake_matrix(""), tmp_path / "reports", tmp_path / "lock"
    first = harness("run", str(matrix), "--launches", "3", out=out)
    assert first.returncode == 0, first.stderr
    found = results(out)
    assert len(found) == 6 and all(r["summary"]["launches"] == 3 for r in found.values())
    assert all(len(r["summary"]["repeats"]) == 3 and len(r["machine_s"]) == 3 for r in found.values())
    starts = {}  # (launch, label) -> when it started: round r runs every configuration before round r + 1
    for cell_dir in (out / "fake" / "runs").iterdir():
        for k in range(3):
            launch = json.loads((cell_dir / "launches" / str(k) / "summary.json").read_text())
            assert (cell_dir / "launches" / str(k) / "records.jsonl").exists()
            starts[(k, launch["label"])] = launch["started_at"]
    for k in range(2):
        assert max(v for (r, _), v in starts.items() if r == k) <= min(v for (r, _), v in starts.items() if r == k + 1)
    assert not (out / "fake" / "calibration.json").exists()  # the fake server's speed is not the machine's

    cell_dir = next((out / "fake" / "runs").iterdir())
    (cell_dir / "launches" / "1" / "summary.json").unlink()  # as if interrupted in round 2
    (cell_dir / "summary.json").unlink()
    resumed = harness("run", str(matrix), "--launches", "3", out=out)
    assert resumed.returncode == 0 and "1 cells run, 0 failed, 5 already complete" in resumed.stdout, resumed.stdout

    env = ["--lock-dir", str(lock_dir)]
    assert harness("baseline", str(matrix), *env, "--allow-dirty", out=out).returncode == 0
    gate = harness("gate", str(matrix), *env, out=out)
    assert gate.returncode in (0, 3) and "| regressed |" not in gate.stdout, gate.stdout
    slower = fake_matrix('"--itl-ms", "9"')  # 80% slower per token, same cells by label
    # `harness regress` is run (afresh) + gate in one command, with the gate's exit code (make's would be 2)
    gate = harness("regress", str(slower), "--launches", "3", *env, out=out)
    assert gate.returncode == 1 and "matched by label" in gate.stdout, gate.stdout
    assert "6 cells run, 0 failed, 0 already complete" in gate.stdout
    assert "| regressed | m/fake/bf16/tp1/off/w/c1 | tpot_ms.median" in gate.stdout
    assert not live_pids("harness_testing.fake_engine")


def test_compare_runs_both_interleaved_and_judges_b(write_matrix: Callable[..., Path], tiny_tokenizer_dir: Path,
                                                   tmp_path: Path) -> None:
    out = tmp_path / "reports"
    a = write_matrix(FAKE_MATRIX.format(model=tiny_tokenizer_dir, extra='"--itl-ms", "4"'), "a.yaml")
    b = write_matrix(FAKE_MATRIX.format(model=tiny_tokenizer_dir, extra='"--itl-ms", "8"'), "b.yaml")
    proc = harness("compare", str(a), str(b), "--launches", "3", out=out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "| regressed | m/fake/bf16/tp1/off/w/c1 | tpot_ms.median" in proc.stdout
    assert "3 paired rounds" in proc.stdout and "paired by round" in proc.stdout
    saved = json.loads((out / "compare" / "fake-vs-fake" / "compare.json").read_text())
    assert any(r["status"] == "regressed" for r in saved["rows"])
    bad = harness("compare", str(a), str(b), "--tolerance", "1.5", out=out)
    assert bad.returncode == 2 and "--tolerance" in bad.stderr and "fix:" in bad.stderr
    assert not live_pids("harness_testing.fake_engine")


def test_more_launches_relaunch_only_their_cells_and_claims_raise_requests(
        fake_matrix: Callable[[str], Path], tmp_path: Path) -> None:
    """The c1 cells on two launches (their servers launched again for them alone), the c3 cells on the requests
    their SLO claims ask for, the `off` c2 cell on the requests `more_requests` asks for; the rest on one launch of
    4 requests."""
    base = fake_matrix("").read_text()
    matrix = fake_matrix("").with_name("more.yaml")
    matrix.write_text(base + "slo: {ttft_ms: 1000, tpot_ms: 50}\n"
                      "more_launches: [{cells: {concurrency: 1}, launches: 2}]\n"
                      "claims: {cells: [{concurrency: 3}], num_requests: 12}\n"
                      "more_requests: [{cells: {concurrency: 2, speculation: 'off'}, num_requests: 6}]\n")
    out = tmp_path / "reports"
    planned = cli.harness("plan", str(matrix))
    assert planned.returncode == 0, planned.stderr
    assert "up to 2 launches" in planned.stdout and "(4 requests + 1 warm-up, 2 launches)" in planned.stdout
    assert "SLO claims on its 12 requests: TTFT p99 and TPOT p99 need 459 requests" in planned.stdout
    assert "(6 requests + 1 warm-up)" in planned.stdout
    assert "\n4 launches, 6 cells" in planned.stdout  # each server twice: once for all, once more for c1
    proc = harness("run", str(matrix), out=out)
    assert proc.returncode == 0, proc.stderr
    found = results(out)
    assert {label: (r["summary"]["launches"], r["summary"]["completed"]) for label, r in found.items()} == {
        f"m/fake/bf16/tp1/{spec}/w/c{c}": (2 if c == 1 else 1, {1: 4 * 2, 2: 6 if spec == "off" else 4, 3: 12}[c])
        for spec in ("off", "mtp2") for c in (1, 2, 3)}
    rounds: dict[int, set[str]] = {}
    for cell_dir in (out / "fake" / "runs").iterdir():
        for launch in (cell_dir / "launches").iterdir():
            rounds.setdefault(int(launch.name), set()).add(json.loads((launch / "summary.json").read_text())["label"])
    assert rounds[1] == {"m/fake/bf16/tp1/off/w/c1", "m/fake/bf16/tp1/mtp2/w/c1"} and len(rounds[0]) == 6
    report = (out / "fake" / "report.md").read_text()
    assert "launch interval" in report and "one launch each" in report  # c1's pair has one, the others not
    assert not live_pids("harness_testing.fake_engine")
