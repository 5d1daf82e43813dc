"""The nsys stats CSV parsers, on files of the documented formats."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.profiling.nsys_stats import (
    ApiSumRow,
    KernelSumRow,
    MemSizeSumRow,
    StatsFormatError,
    load_stats,
    parse_rows,
    report_csv,
)

DATA = Path(__file__).parent / "data" / "nsys"


def test_kernel_summary_rows_are_typed_and_names_keep_their_commas() -> None:
    rows = parse_rows(DATA / "ep8_cuda_gpu_kern_sum.csv", KernelSumRow)
    assert len(rows) == 13
    top = rows[0]
    assert top.name.startswith("void deep_gemm::sm90_m_grouped_fp8_gemm_masked_1d2d_impl<(unsigned int)128, ")
    assert top.name.endswith("CUtensorMap, CUtensorMap)")
    assert (top.total_time_ns, top.instances, top.time_pct) == (412337920, 7320, 31.9)
    assert isinstance(top.instances, int) and isinstance(top.total_time_ns, float)
    assert sum(r.time_pct for r in rows) == pytest.approx(100, abs=0.5)


def test_fully_quoted_files_parse_the_same() -> None:
    rows = parse_rows(DATA / "tp8_cuda_gpu_kern_sum.csv", KernelSumRow)
    assert rows[0].name == "fused_moe_kernel" and rows[0].instances == 7320


def test_all_reports_of_a_prefix() -> None:
    stats = load_stats(DATA / "ep8")
    assert stats.missing_reports == ()
    assert [m.operation for m in stats.mem_time][:2] == ["[CUDA memcpy Host-to-Device]", "[CUDA memcpy Device-to-Host]"]
    assert stats.mem_time[0].count == 1208
    size = {m.operation: m for m in stats.mem_size}
    assert size["[CUDA memcpy Host-to-Device]"].total_mb == pytest.approx(38.912)
    assert [r.range for r in stats.nccl_ranges()] == ["NCCL:ncclAllGather", "NCCL:ncclGroupEnd", "NCCL:ncclGroupStart"]
    assert stats.nvtx[0].style == "PushPop"
    api = {a.name: a for a in stats.cuda_api}
    assert api["cudaGraphLaunch"].num_calls == 3600
    entries = stats.kernel_entries()
    assert len(entries) == 13 and entries[0][1:] == (412337920.0, 7320)


def test_a_report_nsys_skipped_has_no_file_and_no_rows() -> None:
    stats = load_stats(DATA / "tp8")
    assert len(stats.kernels) == 11
    assert stats.missing_reports == ("cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "nvtx_sum", "cuda_api_sum")
    assert stats.mem_time == () and stats.nccl_ranges() == ()


def test_preamble_lines_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "x_cuda_api_sum.csv"
    path.write_text("Generating SQLite file /tmp/p.sqlite from /tmp/p.nsys-rep\n"
                    "Processing [/tmp/p.sqlite] with [/opt/nsys/reports/cuda_api_sum.py]...\n"
                    "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
                    "81.2,131012864,1,131012864.0,131012864.0,131012864,131012864,0.0,cudaMalloc\n"
                    "\n")
    rows = parse_rows(path, ApiSumRow)
    assert [(r.name, r.num_calls) for r in rows] == [("cudaMalloc", 1)]


def test_a_skipped_report_message_is_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "x_cuda_gpu_mem_size_sum.csv"
    path.write_text("SKIPPED: /tmp/p.sqlite does not contain GPU memory data.\n")
    assert parse_rows(path, MemSizeSumRow) == []


def test_the_wrong_report_is_an_error() -> None:
    with pytest.raises(StatsFormatError, match="no header"):
        parse_rows(DATA / "ep8_cuda_api_sum.csv", KernelSumRow)


def test_report_csv_names_follow_nsys() -> None:
    assert report_csv(Path("/p/cell/stats"), "nvtx_sum") == Path("/p/cell/stats_nvtx_sum.csv")
