"""Refit the ``cpu-step`` predictor's calibration on stored runs: write the calibration it fits its engine costs
from (``harness/predict/cpu_step_calibration.json``), and show how well the fit predicts cells it never saw.

Reads every measured bf16 (and int8 W8A8) cell of the given report folders (vLLM on the CPU, a workload of known
lengths): those without speculation fix the engine's costs at their tensor-parallel degree (the int8 cells the rate
of int8 matrices), the speculative ones at concurrency 1 the drafting step's (with the acceptance each measured). It
times the GEMMs of each cell's steps on this machine (the same kernels, ranks and threads the engine used: run it on
the kind of machine that measured the cells, quiet), measures the machine-speed probe, and writes the calibration
JSON. The cells of ``--check`` folders, and those of ``--hold-out`` models (left out of the fit), are predicted from
the fit and printed as measured ÷ predicted, cell by cell, with the median |ratio - 1|.

    HARNESS_FIXTURES_DIR=build/fixtures .venv/bin/python -m tools.refit_cpu_step reports/a reports/b \\
        --check reports/c --out harness/predict/cpu_step_calibration.json --measured "AMD EPYC 2 cores, ..."

The fit itself (``harness.predict.cpu_step_fit``) is the predictor's; this tool only gathers its inputs.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.config.predict import PredictSpec
from harness.plan import Cell
from harness.predict import Prediction
from harness.predict.cpu_kernels import CheckpointShape, mflop, rank_gemm_ms, read_shape
from harness.predict.cpu_machine import engine_threads, probe_seconds
from harness.predict.cpu_step import CpuStep
from harness.predict.cpu_step_fit import CalibrationCell, CalibrationRun, EngineCosts, fit, fitted_degrees
from harness.result_records import CellResult
from harness.servers.runtime import resolve_checkpoint, resolve_model_path


@dataclass(frozen=True, slots=True)
class Measured:
    """One stored cell the calibration can use, and the report folder it came from."""

    report: Path
    cell: Cell
    result: CellResult


@dataclass(frozen=True, slots=True)
class Checked:
    """A cell predicted from the fit: measured ÷ predicted of its TTFT and TPOT medians and its output tok/s."""

    report: Path
    label: str
    ttft: float
    tpot: float
    tok_s: float


def measured_cells(report: Path) -> list[Measured]:
    """The report's measured cells of the vLLM CPU engine (bf16 or int8 W8A8 weights, the KV cache as the model's)
    whose workload lengths are known."""
    found = []
    for cell_dir in sorted((report / "runs").iterdir()):
        try:
            cell = Cell.model_validate_json((cell_dir / "cell.json").read_text())
            result = CellResult.model_validate_json((cell_dir / "summary.json").read_text())
        except (OSError, ValueError):
            continue  # not a cell's folder, or a cell that never finished
        summary = result.summary
        if (result.status == "ok" and summary is not None and summary.ttft_ms and summary.tpot_ms
                and cell.workload.mean_lengths() is not None and cell.server.runtime == "vllm"
                and cell.server.precision.weights in ("bf16", "int8") and cell.server.precision.kv_cache == "auto"
                and cell.server.hardware.kind == "cpu"):
            found.append(Measured(report, cell, result))
    return found


def calibration_cell(measured: Measured, kernels: dict[str, float]) -> CalibrationCell:
    """The cell's measured medians beside what its steps compute: the streamed GEMMs timed here (``kernels`` caches
    the timings), the cached matrices' MFLOP, and the drafter's share when it speculates."""
    cell, summary = measured.cell, measured.result.summary
    server = cell.server
    if summary is None or summary.ttft_ms is None or summary.tpot_ms is None:
        raise ValueError(f"{cell.label}: no TTFT and TPOT to calibrate on")
    ranks = server.parallel.tp
    threads = engine_threads(ranks)
    trunk = read_shape(Path(resolve_model_path(server)))
    c, (isl, _) = cell.concurrency, cell.workload.mean_lengths() or (0, 0)
    method = server.speculation.method
    k = int(getattr(server.speculation.root, "k", 0)) if method != "off" else 0
    accepted = 0.0
    if k and summary.speculation is not None and summary.speculation.acceptance_length:
        accepted = summary.speculation.acceptance_length - 1

    def streamed(shape: CheckpointShape, tokens: int, logits: int, mtp: bool = False) -> float:
        return (rank_gemm_ms(shape.mtp if mtp else shape.trunk, tokens, ranks, threads, kernels)
                + rank_gemm_ms(shape.streamed_head, logits, ranks, threads, kernels))

    def flops(shape: CheckpointShape, tokens: int, logits: int, mtp: bool = False) -> float:
        cached = 0.0 if mtp else mflop(shape.small, tokens, ranks) + mflop(shape.small_int8, tokens, ranks)
        return cached + mflop(shape.cached_head, logits, ranks)

    draft = draft_flops = 0.0
    drafter = trunk if method == "mtp" else None
    if server.speculation.draft_model:
        drafter = read_shape(Path(resolve_checkpoint(server.speculation.draft_model)))
    if drafter is not None:
        draft, draft_flops = streamed(drafter, c, c, method == "mtp"), flops(drafter, c, c, method == "mtp")
    weights = "" if server.precision.weights == "bf16" else f" {server.precision.weights}"
    return CalibrationCell(
        label=f"{server.model_name}{weights} tp{ranks} {method} c{c}", concurrency=c, input_tokens=isl,
        ttft_ms=summary.ttft_ms.median, tpot_ms=summary.tpot_ms.median,
        gemm_decode_ms=streamed(trunk, c * (k + 1), c * (k + 1)), gemm_prefill_ms=streamed(trunk, c * isl, c),
        mflop_decode=flops(trunk, c * (k + 1), c * (k + 1)), mflop_prefill=flops(trunk, c * isl, c),
        int8_mflop_decode=mflop(trunk.small_int8, c * (k + 1), ranks),
        int8_mflop_prefill=mflop(trunk.small_int8, c * isl, ranks),
        layers=trunk.layers, tp=ranks, method=method, k=k, accepted=accepted, draft_gemm_ms=draft,
        draft_mflop=draft_flops)


def fitted_costs(run: CalibrationRun) -> dict[int, EngineCosts]:
    """The engine's costs at each degree the run has plain cells at, with tp 1's drafting steps at every degree
    (the predictor's own reference: a drafter's step is taken as the same multiple of whatever step it rides on)."""
    single = fit(run)
    return {tp: fit(run, tp=tp).model_copy(update={"draft_steps": single.draft_steps}) for tp in fitted_degrees(run)}


def check(run: CalibrationRun, cells: Sequence[Measured]) -> list[Checked]:
    """``cells`` predicted from the run's fit (with the acceptance each measured, as a run would once known); cells
    at a degree the run has no plain cell at, and those the predictor does not answer, are left out."""
    fitted = fitted_costs(run)
    checked = []
    for measured in cells:
        cell, summary = measured.cell, measured.result.summary
        if summary is None or summary.ttft_ms is None or summary.tpot_ms is None:
            continue
        if cell.server.parallel.tp not in fitted:
            continue
        spec = PredictSpec()
        if summary.speculation is not None and summary.speculation.acceptance_length:
            k = int(getattr(cell.server.speculation.root, "k", 0))
            spec = PredictSpec(accepted_tokens={k: summary.speculation.acceptance_length - 1})
        predictor = CpuStep(spec, costs=fitted[cell.server.parallel.tp], speed_ratio=1.0)
        (out,) = predictor.predict(cell.server, [cell])
        if isinstance(out, Prediction):
            checked.append(Checked(measured.report, cell.label, summary.ttft_ms.median / out.ttft_ms,
                                   summary.tpot_ms.median / out.tpot_ms, summary.output_throughput / out.output_tok_s))
    return checked


def median_error(checked: Sequence[Checked]) -> float:
    """The median |measured ÷ predicted - 1| over every figure of ``checked``: the one number a refit is judged by."""
    return statistics.median(abs(ratio - 1) for c in checked for ratio in (c.ttft, c.tpot, c.tok_s))


def refit(reports: Sequence[Path], measured: str,
          hold_out: Sequence[str] = ()) -> tuple[CalibrationRun, list[Measured]]:
    """The calibration run of the reports' usable cells (GEMMs timed and the probe measured here), less the cells
    of the ``hold_out`` models, which come back apart for ``check``."""
    kernels: dict[str, float] = {}
    found = [m for report in reports for m in measured_cells(report)]
    held = [m for m in found if m.cell.server.model_name in hold_out]
    cells = tuple(calibration_cell(m, kernels) for m in found if m not in held)
    run = CalibrationRun(measured=measured or ", ".join(map(str, reports)), probe_s=probe_seconds(),
                         threads=engine_threads(), cells=cells)
    return run, held


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.refit_cpu_step", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", type=Path, help="reports/<matrix> folders of measured runs")
    parser.add_argument("--check", nargs="*", type=Path, default=[], help="folders to predict with the fit")
    parser.add_argument("--hold-out", nargs="*", default=[], metavar="MODEL",
                        help="models (a matrix's model names) left out of the fit and predicted with it")
    parser.add_argument("--out", type=Path, help="write the calibration JSON here")
    parser.add_argument("--measured", default="", help="machine, engine and dates of the runs, for the record")
    args = parser.parse_args(argv)
    run, held = refit(args.reports, args.measured, args.hold_out)
    for tp, costs in fitted_costs(run).items():
        print(f"tp {tp}:", costs.model_dump(exclude={"source"}))
    checked = check(run, held + [m for report in args.check for m in measured_cells(report)])
    for c in checked:
        print(f"{c.report.parent.parent.name:8s} {c.label:60s} TTFT {c.ttft:5.2f}  TPOT {c.tpot:5.2f}  "
              f"tok/s {c.tok_s:5.2f}")
    if checked:
        print(f"checked: median |measured / predicted - 1| {median_error(checked):.1%} over {3 * len(checked)} "
              "figures")
    if args.out:
        args.out.write_text(run.model_dump_json(indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
