"""The phase clock ``make bench`` and ``make test`` run each phase under: the CPU of every process a phase started,
orphans included, its exit code passed through, and the table both commands end with."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tools.phase_clock import (
    PHASES_LIKE,
    SLOWEST_KIND,
    WALL_RATIO_TO_SLOWEST,
    PhaseRecord,
    machine_kind,
    minutes_left,
    read_records,
    report,
)

from tests.support.hosts import CPUINFO

# The phase's command starts a grandchild in a session of its own that burns CPU, reads that it has, and exits
# while the grandchild still runs: the grandchild is orphaned, and only a subreaper counts its CPU
_ORPHANING = """
import subprocess, sys
burn = ("import sys, time\\nwhile time.process_time() < 0.3: pass\\n"
        "print('burnt', flush=True)\\nsys.stdin.read()")
child = subprocess.Popen([sys.executable, '-c', burn], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         start_new_session=True, text=True)
assert child.stdout.readline() == 'burnt\\n'
raise SystemExit(3)  # exits without waiting: closing our end of its stdin lets it end, as an orphan
"""


def test_a_phase_counts_the_cpu_of_what_it_orphaned_and_passes_its_exit_code_on(tmp_path: Path) -> None:
    log = tmp_path / "phases" / "bench.jsonl"
    done = subprocess.run([sys.executable, "-m", "tools.phase_clock", "run", "orphaning", "--log", str(log), "--",
                           sys.executable, "-c", _ORPHANING], timeout=120)
    assert done.returncode == 3
    (record,) = read_records(log)
    assert record.phase == "orphaning" and record.rc == 3 and record.left_running == 0
    assert record.cpu_s >= 0.3 and record.wall_s > 0


def test_a_record_cut_short_by_a_kill_is_skipped(tmp_path: Path) -> None:
    log = tmp_path / "test.jsonl"
    whole = PhaseRecord("setup", 100.0, 50.0, 40.0, 0)
    log.write_text(json.dumps({
        "phase": "setup", "started": 100.0, "wall_s": 50.0, "cpu_s": 40.0, "rc": 0, "left_running": 0})
        + '\n{"phase": "lanes", "started": 15')
    assert read_records(log) == [whole]


def test_the_table_gives_each_phase_and_the_slowest_kinds_wall_as_an_input() -> None:
    kind = machine_kind(CPUINFO["amd-epyc"])
    records = [PhaseRecord("lanes", 160.0, 400.0, 700.0, 0), PhaseRecord("setup", 100.0, 60.0, 30.0, 0, 1)]
    lines = report(records, "make test", kind, since=100.0, now=580.0)
    assert lines[0] == f"make test: CPU time by phase on this machine ({kind})"
    assert [line.split()[0] for line in lines[2:5]] == ["setup", "lanes", "all"]
    assert "1 still running: not counted" in lines[2]
    assert lines[4].split()[1:4] == ["0s", "480s", "730s"]
    ratio = WALL_RATIO_TO_SLOWEST[kind]["make test"]
    assert f"about {480 * ratio / 60:.1f} min (this wall x {ratio:g}" in lines[5] and "an input" in lines[5]
    unmeasured = machine_kind(CPUINFO["intel-xeon"])
    assert f"no ratio measured for {unmeasured}" in report(records, "make test", unmeasured, None, 580.0)[-1]
    assert len(report(records, "make test", SLOWEST_KIND, None, 580.0)) == 5  # on the slowest kind: its own wall


def test_the_machine_kind_is_the_vendor_and_its_widest_matrix_instructions() -> None:
    amd, intel = machine_kind(CPUINFO["amd-epyc"]), machine_kind(CPUINFO["intel-xeon"])
    assert amd.startswith("AVX-512 ") and intel.startswith("Intel AMX ")
    without = CPUINFO["amd-epyc"].replace(" avx512f avx512_bf16", "")
    assert machine_kind(without) == amd.replace("AVX-512", "AVX2-only") == SLOWEST_KIND
    assert machine_kind("") == "AVX2-only CPU"


def test_a_composite_command_scales_each_phase_by_the_command_it_is_like() -> None:
    kind = machine_kind(CPUINFO["amd-epyc"])
    ratios, like = WALL_RATIO_TO_SLOWEST[kind], PHASES_LIKE[".ci/run"]
    tested = [PhaseRecord("make-test", 100.0, 360.0, 600.0, 0)]
    checked = [*tested, PhaseRecord("regression-check", 460.0, 120.0, 150.0, 0)]
    scaled = 360.0 * ratios[like["make-test"]] + 120.0 * ratios[like["regression-check"]]
    line = report(checked, ".ci/run", kind, since=100.0, now=580.0)[-1]
    assert f"about {scaled / 60:.1f} min (make-test x " in line and "inputs, not this run's measurement" in line
    # what is left of 20 minutes on the slowest kind after make test, in this machine's minutes of the next phase
    left = minutes_left(tested, ".ci/run", kind, 20.0, "regression-check")
    assert left == (20.0 - 360.0 * ratios[like["make-test"]] / 60) / ratios[like["regression-check"]]
    assert minutes_left([PhaseRecord("make-test", 100.0, 900.0, 1.0, 0)], ".ci/run", kind, 20.0,
                        "regression-check") == 0.0  # spent: nothing left, never below
    unmeasured = machine_kind(CPUINFO["intel-xeon"])
    assert minutes_left(tested, ".ci/run", unmeasured, 20.0, "regression-check") == 20.0
    assert "no ratio measured" in report(checked, ".ci/run", unmeasured, None, 580.0)[-1]
