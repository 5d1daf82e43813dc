"""The records the store keeps about a run, as strict models: a cell's result, the run's stamp, an SLO search.

``harness.store`` says where each lives (``runs/<cell_id>/summary.json``, ``run.json``,
``searches/<search_id>.json``) and writes and reads them; this module is their schema only. A record that no longer
validates (a file from an incompatible version, a truncated one) is read back as absent, never half-trusted.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from harness.metrics.cell_summary import CellSummary


class RunStamp(BaseModel):
    """A run's identity: what the results history keys the run by."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    started_at: str


class CellResult(BaseModel):
    """The outcome of one cell: measured figures, or the reason it has none."""

    model_config = ConfigDict(extra="forbid")

    cell_id: str
    label: str
    server_id: str
    status: Literal["ok", "failed"]
    reason: str | None = None
    log_tail: str | None = None
    started_at: str
    finished_at: str
    server_ready_s: float | None = None
    summary: CellSummary | None = None
    machine_s: tuple[float | None, ...] = ()
    """The machine-speed probe's seconds around each launch the summary pools, in launch order (None where no
    probe ran): what lets a gate judge timing relative to the machine's speed (``harness.calibration``)."""


class SearchProbe(BaseModel):
    """One probe of an SLO search: the load it ran at, its cell, and the SLO verdict that steered the search."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float
    cell_id: str
    meets: bool
    misses: tuple[str, ...] = ()
    unsupported: tuple[str, ...] = ()
    """SLO bounds its requests were too few to claim either way (met, missed or insufficient samples: LoadGen's
    early-stopping bound); the search steers by the figures, and the report says which answers rest on too few."""
    output_throughput: float | None = None
    reused: bool = False
    """The cell was already measured (a grid point, or an interrupted run's probe): not measured again."""


class SearchRecord(BaseModel):
    """An SLO search as it ran (``harness.pipeline.search``): the probes in order and where it stopped."""

    model_config = ConfigDict(extra="forbid")

    search_id: str
    label: str
    axis: Literal["concurrency", "request_rate"]
    probes: tuple[SearchProbe, ...] = ()
    answer: float | None = None
    """The highest load that met the SLO; None when even the first probe missed it (or none finished)."""
    stopped: str | None = None
    """Why the search ended (bracketed, saturated, max, min-misses, probe-limit); None while it runs."""
