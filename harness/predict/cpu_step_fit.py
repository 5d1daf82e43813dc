"""Calibrating the CPU step model: the engine's own per-step costs fitted on measured cells.

A calibration run is a handful of measured cells (TTFT and TPOT medians at a few concurrencies) with what each of
their steps computes: the streamed GEMMs, timed on the same machine (``cpu_kernels``), and the FLOPs through the
cached matrices. What is left is the engine's own cost, which the step model takes as a fixed and a per-sequence
cost per trunk layer (a tiny model's step is mostly the per-layer work of many small kernels), a rate for the cached
matrices' FLOPs, and the request path outside the step::

    TPOT - streamed(c)          = L*a + L*s*c + p*flops(c)
    TTFT - streamed(c*isl)      = L*a + L*s*c + p*flops(c*isl) + t0

solved together by non-negative least squares (scipy's ``nnls``), each residual relative to the measured figure so
that every cell weighs the same whatever its size. The costs are fitted apart for each tensor-parallel degree
(``tp``): two ranks on this CPU add collectives and leave the scheduler no core of its own, which no per-rank
scaling of one rank's costs captures. A speculative method's drafting step is fitted as a multiple of the trunk's
fixed step cost ``L*a`` from its cells at concurrency 1, given the acceptance those cells measured.

The committed calibration (``cpu_step_calibration.json`` beside this module) was measured on the machine and dates
it names; the model carries that machine's probe (``cpu_machine.probe_seconds``), and a prediction elsewhere scales
the engine terms by this machine's probe against it. ``python -m tools.refit_cpu_step`` refits it from stored runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

CALIBRATION = Path(__file__).with_name("cpu_step_calibration.json")
LOOKUP_METHODS = frozenset({"ngram", "suffix"})
"""Drafters that propose all k tokens in one lookup of the text, not k steps of a model."""


class CalibrationCell(BaseModel):
    """One measured cell and the GEMM milliseconds of its steps on the machine that measured it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    concurrency: int = Field(gt=0)
    input_tokens: int = Field(gt=0)
    ttft_ms: float = Field(gt=0)
    tpot_ms: float = Field(gt=0)
    gemm_decode_ms: float = Field(ge=0, description="streamed GEMMs of one decode (or verify) step of all c sequences")
    gemm_prefill_ms: float = Field(ge=0, description="streamed GEMMs of one step prefilling all c prompts")
    mflop_decode: float = Field(default=0.0, ge=0, description="cached matrices' MFLOP in that decode step")
    mflop_prefill: float = Field(default=0.0, ge=0, description="cached matrices' MFLOP in that prefill step")
    int8_mflop_decode: float = Field(default=0.0, ge=0, description="of which through int8 matrices (W8A8)")
    int8_mflop_prefill: float = Field(default=0.0, ge=0, description="of which through int8 matrices (W8A8)")
    layers: int = Field(default=2, gt=0, description="the trunk's layers")
    tp: int = Field(default=1, gt=0)
    method: str = Field(default="off", description="speculative method, or off")
    k: int = Field(default=0, ge=0)
    accepted: float = Field(default=0.0, ge=0, description="measured mean accepted draft tokens a step")
    draft_gemm_ms: float = Field(default=0.0, ge=0, description="the drafter's streamed GEMMs of one drafting step")
    draft_mflop: float = Field(default=0.0, ge=0, description="the drafter's cached matrices' MFLOP in that step")


class CalibrationRun(BaseModel):
    """Where and when the cells were measured, and the machine-speed probe there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    measured: str = Field(description="machine, engine, dates and the commands that measured the cells")
    probe_s: float = Field(gt=0, description="cpu_machine.probe_seconds() on that machine")
    threads: int = Field(gt=0)
    cells: tuple[CalibrationCell, ...]


class EngineCosts(BaseModel):
    """The engine's per-step costs: ``a`` (ms) and ``s`` (ms a sequence) per trunk layer, ``p`` (ms per MFLOP
    through the cached matrices), ``t0`` (ms a request outside the step), and where they were fitted."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    a_ms: float
    s_ms: float
    p_ms: float
    t0_ms: float
    probe_s: float
    source: str
    p_int8_ms: float | None = Field(None, description="ms per MFLOP through int8 matrices (None: no int8 cell)")
    draft_steps: dict[str, float] = Field(default_factory=dict,
                                          description="a drafting step's engine cost in units of L*a, by method")


def _solve(rows: list[list[float]], targets: list[float], measured: list[float]) -> list[float]:
    """Non-negative least squares, each row's residual relative to its measured figure: a 0.2 GB model's 500 ms
    steps must not drown a 2 MB model's 4 ms ones, whose error is as large in proportion."""
    from scipy.optimize import nnls

    weights = 1.0 / np.asarray(measured, float)
    solution, _ = nnls(np.asarray(rows, float) * weights[:, None], np.asarray(targets, float) * weights)
    return [float(x) for x in solution]


def verify_ms(costs: EngineCosts, cell: CalibrationCell) -> float:
    """One step verifying ``k+1`` tokens of each of the cell's sequences (a decode step when ``k`` is 0)."""
    return cell.layers * (costs.a_ms + costs.s_ms * cell.concurrency) + costs.p_ms * cell.mflop_decode \
        + cell.gemm_decode_ms


def _draft_multiple(costs: EngineCosts, cell: CalibrationCell) -> float:
    """The drafting step's fixed cost, in units of ``L*a``, that makes the cell's TPOT (given its acceptance)."""
    drafts = 1 if cell.method in LOOKUP_METHODS else cell.k
    spent = cell.tpot_ms * (1 + cell.accepted) - verify_ms(costs, cell)
    per_draft = (spent / drafts - cell.layers * costs.s_ms * cell.concurrency - costs.p_ms * cell.draft_mflop
                 - cell.draft_gemm_ms)
    return max(per_draft / (cell.layers * costs.a_ms), 0.0) if costs.a_ms else 0.0


def fit(run: CalibrationRun, cells: Sequence[CalibrationCell] | None = None, tp: int = 1) -> EngineCosts:
    """The engine's costs at ``tp`` from ``cells`` (default: every cell of the run): ``a``, ``s``, ``p`` and ``t0``
    on the cells without speculation, then each method's drafting step on its cells at concurrency 1 (tensor
    parallel 1: a drafter's cost is taken as the same multiple of whatever step it rides on)."""
    chosen = [c for c in (cells if cells is not None else run.cells) if c.tp == tp]
    plain = [c for c in chosen if c.method == "off"]
    if not plain:
        raise ValueError(f"a calibration at tp {tp} needs at least one measured cell without speculation")
    int8 = any(c.int8_mflop_prefill for c in plain)
    rows, targets, measured = [], [], []
    for c in plain:
        for mflop, int8_mflop, t0, target, figure in (
                (c.mflop_decode, c.int8_mflop_decode, 0.0, c.tpot_ms - c.gemm_decode_ms, c.tpot_ms),
                (c.mflop_prefill, c.int8_mflop_prefill, 1.0, c.ttft_ms - c.gemm_prefill_ms, c.ttft_ms)):
            row = [c.layers, c.layers * c.concurrency, mflop - int8_mflop, t0]
            rows.append(row + [int8_mflop] if int8 else row)
            targets.append(target)
            measured.append(figure)
    a, s, p, t0, *p_int8 = _solve(rows, targets, measured)
    models = ", ".join(sorted({c.label.split()[0] for c in plain}))
    costs = EngineCosts(a_ms=a, s_ms=s, p_ms=p, t0_ms=t0, probe_s=run.probe_s, p_int8_ms=p_int8[0] if int8 else None,
                        source=f"fitted on {len(plain)} cells of {models}")
    drafted = [c for c in chosen if c.method != "off" and c.concurrency == 1] if tp == 1 else []
    by_method: dict[str, list[float]] = {}
    for cell in drafted:
        by_method.setdefault(cell.method, []).append(_draft_multiple(costs, cell))
    steps = {method: round(statistics.median(found), 3) for method, found in sorted(by_method.items())}
    return costs.model_copy(update={"draft_steps": steps})


def fitted_degrees(run: CalibrationRun) -> tuple[int, ...]:
    """The tensor-parallel degrees the run has cells without speculation at."""
    return tuple(sorted({c.tp for c in run.cells if c.method == "off"}))


def load_calibration(path: Path = CALIBRATION) -> CalibrationRun:
    return CalibrationRun.model_validate_json(path.read_text())
