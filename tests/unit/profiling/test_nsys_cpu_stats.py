"""A CPU capture's summaries: nsys 2022.4's CSVs (real output, tests/unit/profiling/data/cpu_*.csv) and the leaf
frames of its SQLite export, in the export's own schema."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from harness.profiling import CpuCaptureRun, CpuWindow, ProfileFile, ProfileOutcome, summarize_cpu_capture
from harness.profiling.nsys_cpu_stats import OSRT_REPORTS, sampled_functions, stats_argv
from harness.profiling.summary_files import render_nsys_cpu_md

DATA = Path(__file__).parent / "data"
LIBGOMP = "/venv/torch/lib/libgomp.so.1"
LIBTORCH = "/venv/torch/lib/libtorch_cpu.so"


def export(path: Path, frames: list[tuple[int, str, str, int, int]]) -> Path:
    """An nsys SQLite export's two tables the sample query reads: (sample id, symbol, module, unresolved, depth)."""
    strings: dict[str, int] = {}
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL, module INTEGER "
                   "NOT NULL, kernelMode INTEGER, thumbCode INTEGER, unresolved INTEGER, specialEntry INTEGER, "
                   "originalIP INTEGER, unwindMethod INTEGER, stackDepth INTEGER NOT NULL, "
                   "PRIMARY KEY (id, stackDepth))")
        for sample, symbol, module, unresolved, depth in frames:
            ids = [strings.setdefault(name, len(strings)) for name in (symbol, module)]
            db.execute("INSERT OR IGNORE INTO StringIds VALUES (?, ?), (?, ?)", (ids[0], symbol, ids[1], module))
            db.execute("INSERT INTO SAMPLING_CALLCHAINS (id, symbol, module, unresolved, stackDepth) "
                       "VALUES (?, ?, ?, ?, ?)", (sample, ids[0], ids[1], unresolved, depth))
    return path


SGEMM = "mkl_blas_def_sgemm_kernel_0_zen"
FRAMES = [(1, "0x7f01", LIBGOMP, 1, 0), (2, "0x7f02", LIBGOMP, 1, 0), (3, "0x7f03", LIBGOMP, 1, 0),
          (4, SGEMM, LIBTORCH, 0, 0), (5, SGEMM, LIBTORCH, 0, 0),
          (4, "at::native::addmm", LIBTORCH, 0, 1), (6, "_int_free", "/lib/libc.so.6", 0, 0)]


def test_leaf_frames_count_by_function_and_library_with_unresolved_addresses_pooled(tmp_path: Path) -> None:
    total, top = sampled_functions(export(tmp_path / "e.sqlite", FRAMES), top_n=2)
    assert total == 6  # leaf frames only: the caller at depth 1 is not a sample
    assert [(f.function, f.module, f.samples) for f in top] == [
        ("[unresolved]", "libgomp.so.1", 3), (SGEMM, "libtorch_cpu.so", 2)]
    assert top[0].share_pct == 50.0


def test_an_export_without_samples_reads_as_none(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "e.sqlite") as db:
        db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    assert sampled_functions(tmp_path / "e.sqlite", 5) == (0, ())


def test_stats_asks_for_both_releases_report_names() -> None:
    argv = stats_argv("/b/nsys", Path("r.nsys-rep"), Path("r"))
    assert set(OSRT_REPORTS) <= set(argv[argv.index("--report") + 1].split(","))


def _captured(tmp_path: Path, nsys: str) -> CpuCaptureRun:
    report = tmp_path / "nsys.nsys-rep"
    report.write_bytes(b"\0" * 2048)
    outcome = ProfileOutcome(status="captured", runtime="vllm", mode="nsys", files=(ProfileFile(
        name=report.name, bytes=2048),), total_bytes=2048, window_s=20.0)
    return CpuCaptureRun(outcome=outcome, window=CpuWindow(delay_s=45, window_s=20), ready_s=31.5, exit_code=143,
                         argv=(nsys, "profile", "serve"))


async def test_a_captured_window_is_summarised_from_the_csvs_and_the_export(tmp_path: Path) -> None:
    # a stand-in nsys that writes what 2022.4 writes: the CSVs under the prefix, then the SQLite export
    script = tmp_path / "nsys"
    script.write_text(f"#!/bin/sh\ncase $1 in stats) cp {DATA}/cpu_osrtsum.csv {tmp_path}/nsys_osrtsum.csv; "
                      f"cp {DATA}/cpu_nvtxsum.csv {tmp_path}/nsys_nvtxsum.csv;; export) cp {tmp_path}/e.sqlite "
                      f"{tmp_path}/nsys.sqlite;; esac\n")
    script.chmod(0o755)
    export(tmp_path / "e.sqlite", FRAMES)
    profile = await summarize_cpu_capture(_captured(tmp_path, str(script)), tmp_path, top_n=3)
    assert profile.summarize_error is None and profile.samples == 6
    assert not (tmp_path / "nsys.sqlite").exists()  # read, then removed: the report it came from is kept
    assert [r.name for r in profile.os_calls] == ["clock_nanosleep", "pthread_cond_signal"]
    assert profile.nvtx[0].range == "matmul_batch" and profile.nvtx[0].instances == 12
    text = "\n".join(render_nsys_cpu_md(profile))
    assert "6 CPU samples" in text and "`clock_nanosleep` | 125.4 | 99.8% | 12 |" in text
    assert "window 20 s from 45 s after launch; server ready after 32 s" in text


async def test_stats_that_fail_keep_the_capture_and_say_why(tmp_path: Path) -> None:
    script = tmp_path / "nsys"
    script.write_text("#!/bin/sh\necho 'no such function: median' >&2\nexit 1\n")
    script.chmod(0o755)
    profile = await summarize_cpu_capture(_captured(tmp_path, str(script)), tmp_path)
    assert profile.run.outcome.captured and "exited 1: no such function: median" in str(profile.summarize_error)
    assert "not summarized" in "\n".join(render_nsys_cpu_md(profile))
