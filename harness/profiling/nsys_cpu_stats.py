"""A CPU capture's report → what the report shows: OS-runtime calls, NVTX ranges, and where the CPU samples landed.

``nsys stats`` gives the OS-runtime and NVTX summaries as CSV (Nsight Systems 2022.4 calls them ``osrtsum`` and
``nvtxsum``; 2023 and later ``osrt_sum`` and ``nvtx_sum``: both are asked for, whichever exists is read). It has no
report of CPU samples, so those come from the SQLite export: each sample's leaf frame (``stackDepth`` 0 in
``SAMPLING_CALLCHAINS``, names in ``StringIds``), counted by function and module. Nothing here
raises into the pipeline: a capture that cannot be summarised keeps its files and says why.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from harness.profiling.nsys import REPORT_SUFFIX
from harness.profiling.nsys_cpu import CpuCaptureRun
from harness.profiling.nsys_stats import ApiSumRow, NvtxSumRow, StatsFormatError, parse_rows, report_csv

OSRT_REPORTS = ("osrtsum", "osrt_sum")
NVTX_REPORTS = ("nvtxsum", "nvtx_sum")
TOP_FUNCTIONS_SQL = """
SELECT CASE WHEN c.unresolved = 1 THEN '[unresolved]' ELSE s.value END AS function,
       COALESCE(m.value, '') AS module, COUNT(*) AS samples
FROM SAMPLING_CALLCHAINS AS c
JOIN StringIds AS s ON s.id = c.symbol
LEFT JOIN StringIds AS m ON m.id = c.module
WHERE c.stackDepth = 0
GROUP BY function, c.module
ORDER BY samples DESC
"""
"""Leaf frames by function and library. Frames nsys could not symbolise (a stripped libgomp) name a different
address per instruction: they count together, per library, as ``[unresolved]``."""


class SampledFunction(BaseModel):
    """One function where CPU samples landed (the leaf frame), with its library."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    function: str
    module: str
    samples: int = Field(ge=0)
    share_pct: float


class CpuProfile(BaseModel):
    """A CPU server's Nsight Systems capture as the report shows it (inside ``ProfileSummary.nsys_cpu``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run: CpuCaptureRun
    os_calls: tuple[ApiSumRow, ...] = Field((), description="OS-runtime calls by total time (osrtsum)")
    nvtx: tuple[NvtxSumRow, ...] = Field((), description="NVTX ranges (nvtxsum); empty when the engine marks none")
    functions: tuple[SampledFunction, ...] = Field((), description="top functions by CPU samples at the leaf")
    samples: int = Field(0, ge=0, description="CPU samples in the window (leaf frames)")
    summarize_error: str | None = None


async def run_nsys(argv: Sequence[str], timeout_s: float) -> str:
    """Run one nsys command (``stats``, ``export``) to its end and return its output; raises RuntimeError with
    nsys's own words when it fails or outlives ``timeout_s`` (then it is killed)."""
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    try:
        output, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise RuntimeError(f"{Path(argv[0]).name} {argv[1]} took longer than {timeout_s:g} s") from None
    text = output.decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{Path(argv[0]).name} {argv[1]} exited {proc.returncode}: {text.strip()[-400:]}")
    return text


def stats_argv(nsys: str, report: Path, prefix: Path) -> list[str]:
    """``nsys stats`` for the OS-runtime and NVTX summaries, both releases' names (an unknown name is skipped)."""
    return [nsys, "stats", "-q", "--force-export=true", "--report", ",".join((*OSRT_REPORTS, *NVTX_REPORTS)),
            "--format", "csv", "--output", str(prefix), str(report)]


def export_argv(nsys: str, report: Path, database: Path) -> list[str]:
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", str(database), str(report)]


def _first_rows(prefix: Path, names: Sequence[str], row_type: type[ApiSumRow] | type[NvtxSumRow],
                ) -> tuple[ApiSumRow | NvtxSumRow, ...]:
    for name in names:
        if report_csv(prefix, name).is_file():
            return tuple(parse_rows(report_csv(prefix, name), row_type))
    return ()


def sampled_functions(database: Path, top_n: int) -> tuple[int, tuple[SampledFunction, ...]]:
    """(samples in all, the ``top_n`` leaf functions by samples) from an nsys SQLite export."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "SAMPLING_CALLCHAINS" not in tables:
            return 0, ()
        rows = db.execute(TOP_FUNCTIONS_SQL).fetchall()
    total = sum(int(r[2]) for r in rows)
    top = tuple(SampledFunction(function=str(f), module=Path(str(m)).name, samples=int(n),
                                share_pct=round(100 * int(n) / total, 2)) for f, m, n in rows[:top_n])
    return total, top


async def summarize_cpu_capture(run: CpuCaptureRun, out_dir: Path, *, top_n: int = 15,
                                timeout_s: float = 600.0) -> CpuProfile:
    """The capture's summaries; a capture that was not had, or cannot be read, says so."""
    if not run.outcome.captured:
        return CpuProfile(run=run)
    nsys, report = run.argv[0], out_dir / run.outcome.files[0].name
    prefix = out_dir / report.name.removesuffix(REPORT_SUFFIX)
    database = prefix.with_suffix(".sqlite")
    try:
        await run_nsys(stats_argv(nsys, report, prefix), timeout_s)
        if not database.is_file():
            await run_nsys(export_argv(nsys, report, database), timeout_s)
        os_calls = _first_rows(prefix, OSRT_REPORTS, ApiSumRow)
        nvtx = _first_rows(prefix, NVTX_REPORTS, NvtxSumRow)
        samples, functions = await asyncio.to_thread(sampled_functions, database, top_n)
    except (RuntimeError, OSError, sqlite3.Error, StatsFormatError) as exc:
        return CpuProfile(run=run, summarize_error=f"{type(exc).__name__}: {exc}")
    finally:
        # four times the report's size, and `nsys export` remakes it from the report kept beside it
        database.unlink(missing_ok=True)
    return CpuProfile(run=run, os_calls=os_calls[:top_n], nvtx=nvtx[:top_n],
                      functions=functions, samples=samples)
