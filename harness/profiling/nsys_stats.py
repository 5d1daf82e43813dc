"""Parsers for the CSV files ``nsys stats --format csv --output <prefix>`` writes, one ``<prefix>_<report>.csv`` each.

Column headers are those of the Nsight Systems report scripts (2023+ names; older releases called the reports
``gpukernsum`` / ``gpumemtimesum`` / ``gpumemsizesum`` / ``nvtxsum`` / ``cudaapisum``); ``(ns)`` columns abridged::

    cuda_gpu_kern_sum      Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
    cuda_gpu_mem_time_sum  Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation
    cuda_gpu_mem_size_sum  Total (MB),Count,Avg (MB),Med (MB),Min (MB),Max (MB),StdDev (MB),Operation
    nvtx_sum               Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),
                           Style,Range
    cuda_api_sum           Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name

NCCL has no report of its own: its kernels (``ncclDevKernel_*``) are in the kernel summary, and NCCL's built-in
NVTX ranges (``NCCL:ncclAllReduce``, with ``--trace=nvtx``) in ``nvtx_sum``; ``nccl_ranges`` picks those out.
Columns are found by header name, not position, and any lines before the header (``Processing [...]``) are skipped.
A report nsys skipped (no data of that kind) has no file and parses as no rows.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

_Row = TypeVar("_Row", bound=BaseModel)


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _TimeStats(_Frozen):
    time_pct: float
    total_time_ns: float
    avg_ns: float
    med_ns: float
    min_ns: float
    max_ns: float
    stddev_ns: float


class KernelSumRow(_TimeStats):
    """One GPU kernel name in ``cuda_gpu_kern_sum``."""

    instances: int
    name: str


class MemTimeSumRow(_TimeStats):
    """One memory operation kind (``[CUDA memcpy Host-to-Device]``, ``[CUDA memset]``) by time."""

    count: int
    operation: str


class MemSizeSumRow(_Frozen):
    """One memory operation kind by size (MB as nsys prints it: 10^6 bytes)."""

    total_mb: float
    count: int
    avg_mb: float
    med_mb: float
    min_mb: float
    max_mb: float
    stddev_mb: float
    operation: str


class NvtxSumRow(_TimeStats):
    """One NVTX range name (``<domain>:<name>``; the default domain prints as ``:<name>``)."""

    instances: int
    style: str
    range: str


class ApiSumRow(_TimeStats):
    """One CUDA API function on the host."""

    num_calls: int
    name: str


_TIME = {"Time (%)": "time_pct", "Total Time (ns)": "total_time_ns", "Avg (ns)": "avg_ns", "Med (ns)": "med_ns",
         "Min (ns)": "min_ns", "Max (ns)": "max_ns", "StdDev (ns)": "stddev_ns"}
_COLUMNS: dict[type[BaseModel], dict[str, str]] = {
    KernelSumRow: {**_TIME, "Instances": "instances", "Name": "name"},
    MemTimeSumRow: {**_TIME, "Count": "count", "Operation": "operation"},
    MemSizeSumRow: {"Total (MB)": "total_mb", "Count": "count", "Avg (MB)": "avg_mb", "Med (MB)": "med_mb",
                    "Min (MB)": "min_mb", "Max (MB)": "max_mb", "StdDev (MB)": "stddev_mb", "Operation": "operation"},
    NvtxSumRow: {**_TIME, "Instances": "instances", "Style": "style", "Range": "range"},
    ApiSumRow: {**_TIME, "Num Calls": "num_calls", "Name": "name"},
}


class StatsFormatError(ValueError):
    """A CSV file that is not the report it was named as."""


def _number(text: str) -> float:
    # nsys prints plain numbers in CSV; tolerate a thousands separator from a hand-edited or table-format file.
    return float(text.replace(",", "")) if text.strip() else 0.0


def parse_rows(path: Path, row_type: type[_Row]) -> list[_Row]:
    """Rows of one report CSV; an absent file (report skipped for lack of data) is no rows."""
    if not path.is_file():
        return []
    columns = _COLUMNS[row_type]
    with path.open(encoding="utf-8-sig", newline="") as fh:
        lines = list(csv.reader(fh))
    header_at = next((i for i, line in enumerate(lines) if set(columns) <= {c.strip() for c in line}), None)
    if header_at is None:
        if any(line for line in lines if line and not line[0].startswith(("Processing", "SKIPPED", "Generating"))):
            raise StatsFormatError(f"{path.name}: no header with columns {', '.join(columns)}")
        return []
    header = [c.strip() for c in lines[header_at]]
    index = {field: header.index(column) for column, field in columns.items()}
    rows = []
    for line in lines[header_at + 1:]:
        if len(line) < len(header):
            continue  # blank separator lines between reports
        values: dict[str, Any] = {}
        for field, at in index.items():
            annotation = row_type.model_fields[field].annotation
            raw = line[at]
            values[field] = raw if annotation is str else int(_number(raw)) if annotation is int else _number(raw)
        rows.append(row_type(**values))
    return rows


class NsysStats(_Frozen):
    """Every report exported for one ``.nsys-rep``."""

    kernels: tuple[KernelSumRow, ...] = ()
    mem_time: tuple[MemTimeSumRow, ...] = ()
    mem_size: tuple[MemSizeSumRow, ...] = ()
    nvtx: tuple[NvtxSumRow, ...] = ()
    cuda_api: tuple[ApiSumRow, ...] = ()
    missing_reports: tuple[str, ...] = Field((), description="reports with no CSV (nsys skipped them: no such data)")

    def kernel_entries(self) -> list[tuple[str, float, int]]:
        """``(name, total_ns, calls)`` for the profile table."""
        return [(row.name, row.total_time_ns, row.instances) for row in self.kernels]

    def nccl_ranges(self) -> tuple[NvtxSumRow, ...]:
        """NCCL's own NVTX ranges (collective calls as the host issued them)."""
        return tuple(row for row in self.nvtx if row.range.upper().startswith("NCCL:"))


REPORTS: dict[str, tuple[str, type[BaseModel]]] = {
    "cuda_gpu_kern_sum": ("kernels", KernelSumRow),
    "cuda_gpu_mem_time_sum": ("mem_time", MemTimeSumRow),
    "cuda_gpu_mem_size_sum": ("mem_size", MemSizeSumRow),
    "nvtx_sum": ("nvtx", NvtxSumRow),
    "cuda_api_sum": ("cuda_api", ApiSumRow),
}
"""Report name → (NsysStats field, row model); also the reports ``nsys_stats_argv`` asks for, in this order."""


def report_csv(prefix: Path, report: str) -> Path:
    """Where ``nsys stats --output <prefix>`` writes one report."""
    return prefix.parent / f"{prefix.name}_{report}.csv"


def load_stats(prefix: Path, reports: Sequence[str] = tuple(REPORTS)) -> NsysStats:
    """Parse every report CSV written under ``prefix``."""
    fields: dict[str, Any] = {}
    missing = []
    for report in reports:
        field, row_type = REPORTS[report]
        path = report_csv(prefix, report)
        if not path.is_file():
            missing.append(report)
        fields[field] = tuple(parse_rows(path, row_type))
    return NsysStats(**fields, missing_reports=tuple(missing))
