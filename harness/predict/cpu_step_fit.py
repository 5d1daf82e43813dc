"""Calibrating the CPU step model: the engine's own per-step costs fitted on measured cells.

A calibration run is a handful of measured cells (TTFT and TPOT medians at a few concurrencies) with the GEMM time
each of their steps spent, timed on the same machine (``cpu_kernels``). Subtracting the GEMMs leaves what the
engine itself costs, which the step model takes as linear (``cpu_step``)::

    TPOT - gemm(c)         = a + s*c                      (least squares over the cells: a, s)
    TTFT - step(c, c*isl)  = t0 + p*(c*isl - c)           (then t0, p)

each residual relative to the measured figure, so that every cell weighs the same whatever its size.

The committed calibration (``cpu_step_calibration.json`` beside this module) was measured on the machine and date
it names; the model carries that machine's probe (``cpu_step.probe_seconds``), and a prediction elsewhere scales the
engine terms by this machine's probe against it. ``benchmarks/cpu_step_fit.py`` refits from a stored run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

CALIBRATION = Path(__file__).with_name("cpu_step_calibration.json")


class CalibrationCell(BaseModel):
    """One measured cell and the GEMM milliseconds of its steps on the machine that measured it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    concurrency: int = Field(gt=0)
    input_tokens: int = Field(gt=0)
    ttft_ms: float = Field(gt=0)
    tpot_ms: float = Field(gt=0)
    gemm_decode_ms: float = Field(ge=0, description="GEMMs of one decode step of all c sequences")
    gemm_prefill_ms: float = Field(ge=0, description="GEMMs of one step prefilling all c prompts")


class CalibrationRun(BaseModel):
    """Where and when the cells were measured, and the machine-speed probe there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    measured: str = Field(description="machine, engine, date and the command that measured the cells")
    probe_s: float = Field(gt=0, description="cpu_step.probe_seconds() on that machine")
    threads: int = Field(gt=0)
    cells: tuple[CalibrationCell, ...]


class EngineCosts(BaseModel):
    """The engine's per-step costs in ms (fitted), and where they were fitted."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    a_ms: float
    s_ms: float
    p_ms: float
    t0_ms: float
    probe_s: float
    source: str


def _line(xs: Sequence[float], ys: Sequence[float], scale: Sequence[float]) -> tuple[float, float]:
    """Weighted least-squares intercept and slope, each point's residual taken relative to ``scale`` (the measured
    figure): a 0.2 GB model's 500 ms steps must not drown a 2 MB model's 4 ms ones, whose error is as large in
    proportion. A flat line through the weighted mean when every x is the same."""
    weights = [1.0 / v**2 for v in scale]
    total = sum(weights)
    mean_x = sum(w * x for w, x in zip(weights, xs, strict=True)) / total
    mean_y = sum(w * y for w, y in zip(weights, ys, strict=True)) / total
    spread = sum(w * (x - mean_x) ** 2 for w, x in zip(weights, xs, strict=True))
    slope = sum(w * (x - mean_x) * (y - mean_y) for w, x, y in zip(weights, xs, ys, strict=True)) / spread if spread \
        else 0.0
    return mean_y - slope * mean_x, slope


def fit(run: CalibrationRun, cells: Sequence[CalibrationCell] | None = None) -> EngineCosts:
    """The engine's costs from ``cells`` (default: every cell of the run); each term is kept at or above zero."""
    chosen = list(cells if cells is not None else run.cells)
    if not chosen:
        raise ValueError("a calibration needs at least one measured cell")
    a, s = _line([c.concurrency for c in chosen], [c.tpot_ms - c.gemm_decode_ms for c in chosen],
                 [c.tpot_ms for c in chosen])
    a, s = max(a, 0.0), max(s, 0.0)
    extra = [c.concurrency * c.input_tokens - c.concurrency for c in chosen]
    rest = [c.ttft_ms - c.gemm_prefill_ms - (a + s * c.concurrency) for c in chosen]
    t0, p = _line(extra, rest, [c.ttft_ms for c in chosen])
    labels = ", ".join(c.label for c in chosen)
    return EngineCosts(a_ms=a, s_ms=s, p_ms=max(p, 0.0), t0_ms=max(t0, 0.0), probe_s=run.probe_s,
                       source=f"fitted on {labels}; {run.measured}")


def load_calibration(path: Path = CALIBRATION) -> CalibrationRun:
    return CalibrationRun.model_validate_json(path.read_text())
