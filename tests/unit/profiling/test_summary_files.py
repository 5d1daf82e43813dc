"""A capture → ProfileSummary → summary.md / summary.json, for torch traces, nsys reports and missing profiles."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from harness.profiling import ProfileFile, ProfileOutcome, summarize_outcome
from harness.profiling.summary_files import SUMMARY_JSON, SUMMARY_MD, read_summary, write_summary

DATA = Path(__file__).parent / "data"
TRACE = "dp0_pp0_tp0_dcp0_ep0_rank0.1795310540467783014.pt.trace.json.gz"

# Stands in for `nsys stats`: writes the documented CSVs where --output says, as nsys would.
FAKE_NSYS = f"""#!{sys.executable}
import shutil, sys
args = sys.argv[1:]
assert args[:2] == ["stats", "--force-export=true"], args
prefix = args[args.index("--output") + 1]
if "fail" in args[-1]:
    print("ERROR: report file is corrupt", flush=True)
    sys.exit(1)
for report in args[args.index("--report") + 1].split(","):
    src = {str(DATA / "nsys")!r} + "/ep8_" + report + ".csv"
    shutil.copy(src, prefix + "_" + report + ".csv")
"""


def captured(mode: str, files: list[Path]) -> ProfileOutcome:
    return ProfileOutcome.model_validate({
        "status": "captured", "runtime": "vllm", "mode": mode, "window_s": 5.5, "stop_s": 3.9,
        "files": [ProfileFile(name=p.name, bytes=p.stat().st_size) for p in files],
        "total_bytes": sum(p.stat().st_size for p in files)})


@pytest.fixture
def fake_nsys(tmp_path: Path) -> str:
    path = tmp_path / "bin" / "nsys"
    path.parent.mkdir()
    path.write_text(FAKE_NSYS)
    path.chmod(0o755)
    return str(path)


async def test_torch_capture_is_summarized_and_written(tmp_path: Path) -> None:
    cell = tmp_path / "profiles" / "default" / "c0ffee"
    cell.mkdir(parents=True)
    for name in (TRACE, "dp0_pp0_tp0_dcp0_ep0_rank0.profiler_out.txt"):
        shutil.copy(DATA / name, cell / name)
    outcome = captured("torch", sorted(cell.iterdir()))
    summary = await summarize_outcome(outcome, cell, cell_id="c0ffee", label="vllm bf16 c4")
    assert summary.summarize_error is None and summary.table is not None
    assert summary.table.source == "torch_cpu" and summary.table.total_ms == pytest.approx(378.672, abs=0.001)
    md_path = write_summary(summary, cell)
    md = md_path.read_text()
    assert md_path == cell / SUMMARY_MD and (cell / SUMMARY_JSON).is_file()
    assert md.startswith("### Profile: vllm bf16 c4\n")
    assert "Captured with the torch profiler on vllm: window 5.5 s; 2 file(s)" in md
    assert "| MoE GEMM | 6.40 | 1.7% | 256 |" in md
    assert "| 1 | `execute_context_0(0)_generation_1(1)` | sampling / other | 176.09 | 46.5% | 120 |" in md
    assert read_summary(cell) == summary


async def test_nsys_capture_runs_nsys_stats_and_keeps_memcopies_and_nccl(tmp_path: Path, fake_nsys: str) -> None:
    report = tmp_path / "profile.1.nsys-rep"
    report.write_bytes(b"rep")
    argv = ["nsys", "profile", "-o", "p", "python", "-m", "vllm.entrypoints.openai.api_server", "--profiler-config",
            '{"profiler":"cuda"}']
    summary = await summarize_outcome(captured("nsys", [report]), tmp_path, label="ep8", launch_argv=argv,
                                      nsys_executable=fake_nsys)
    assert summary.summarize_error is None and summary.table is not None
    assert summary.table.source == "nsys" and summary.table.share("communication") == pytest.approx(30.73, abs=0.01)
    assert len(summary.memcopies) == 4 and [r.range for r in summary.nccl_ranges][0] == "NCCL:ncclAllGather"
    md = write_summary(summary, tmp_path).read_text()
    assert "`void deep_gemm::sm90_m_grouped_fp8_gemm_masked_1d2d_impl<(unsigned int)128" in md
    assert "…` | MoE GEMM |" in md  # long template names are cut in the table, whole in summary.json
    assert "| [CUDA memcpy Host-to-Device] | 1.84 | 1208 |" in md
    assert "| NCCL:ncclAllGather | 9.81 | 61 |" in md
    assert "--profiler-config '{\"profiler\":\"cuda\"}'" in md


async def test_a_failing_nsys_stats_keeps_the_capture_and_says_why(tmp_path: Path, fake_nsys: str) -> None:
    report = tmp_path / "fail.nsys-rep"
    report.write_bytes(b"rep")
    summary = await summarize_outcome(captured("nsys", [report]), tmp_path, nsys_executable=fake_nsys)
    assert summary.outcome.status == "captured" and summary.table is None
    assert "nsys stats exited 1: ERROR: report file is corrupt" in (summary.summarize_error or "")
    assert "**Captured but not summarized**: RuntimeError: nsys stats exited 1" in write_summary(
        summary, tmp_path).read_text()


async def test_a_corrupt_trace_keeps_the_capture_and_says_why(tmp_path: Path) -> None:
    bad = tmp_path / "w.1.pt.trace.json.gz"
    bad.write_bytes(b"not gzip")
    summary = await summarize_outcome(captured("torch", [bad]), tmp_path)
    assert summary.table is None and "TraceError" in (summary.summarize_error or "")


async def test_a_missing_profile_still_gets_a_summary_that_says_why(tmp_path: Path) -> None:
    outcome = ProfileOutcome.missing("vllm", "nsys", "nsys_missing", "'nsys' not found on PATH: install Nsight Systems")
    summary = await summarize_outcome(outcome, tmp_path, cell_id="abc")
    md = write_summary(summary, tmp_path).read_text()
    assert md == ("### Profile: abc\n\n**Missing** (Nsight Systems on vllm): 'nsys' not found on PATH: install "
                  "Nsight Systems\n\nThe cell's load-test results stand; only its profile is absent.\n")
    assert read_summary(tmp_path) == summary


async def test_a_too_large_profile_is_not_parsed(tmp_path: Path) -> None:
    outcome = ProfileOutcome.model_validate({"status": "too_large", "runtime": "vllm", "mode": "torch",
                                             "reason": "900.0 MiB exceeds the 512 MiB cap", "window_s": 30.0,
                                             "window_truncated": True, "total_bytes": 900 * 2**20})
    summary = await summarize_outcome(outcome, tmp_path)
    md = write_summary(summary, tmp_path).read_text()
    assert summary.table is None
    assert "window 30.0 s (cut at the window cap; the load finished unprofiled)" in md
    assert "**Too large, not summarized**: 900.0 MiB exceeds the 512 MiB cap" in md


def test_read_summary_of_nothing_is_none(tmp_path: Path) -> None:
    assert read_summary(tmp_path) is None


async def test_sglang_named_torch_trace_is_summarized(tmp_path: Path) -> None:
    # SGLang 0.5.23 writes <prefix>-<profile id>-TP-<rank>.trace.json.gz (no ".pt"): the same Chrome trace format
    cell = tmp_path / "c0ffee"
    cell.mkdir()
    shutil.copy(DATA / TRACE, cell / "c0ffee-1795749354.8753498-TP-0.trace.json.gz")
    summary = await summarize_outcome(captured("torch", sorted(cell.iterdir())), cell, cell_id="c0ffee",
                                      label="sglang bf16 c4")
    assert summary.summarize_error is None and summary.table is not None
    assert summary.table.total_ms == pytest.approx(378.672, abs=0.001)
