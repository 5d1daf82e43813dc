"""Calibrate the CPU step model on stored runs: write the calibration the ``cpu-step`` predictor fits its engine
costs from, and show how well it predicts the cells of other runs.

Reads every measured bf16 (and int8 W8A8) cell of the given report folders (vLLM on the CPU, a workload of known
lengths): those without speculation fix the engine's costs at their tensor-parallel degree (the int8 cells the rate
of int8 matrices), the speculative ones at concurrency 1 the
drafting step's (with the acceptance each measured). It times the GEMMs of each cell's steps on this machine (the
same kernels, ranks and threads the engine used: run it on the kind of machine that measured the cells, quiet),
measures the machine-speed probe, and writes the calibration JSON. ``--check`` folders are predicted from the fit
and printed as measured ÷ predicted, cell by cell, with the median |ratio - 1|: runs the fit never saw.

    HARNESS_FIXTURES_DIR=build/fixtures .venv/bin/python benchmarks/cpu_step_fit.py reports/a reports/b \\
        --check reports/c --out harness/predict/cpu_step_calibration.json --measured "AMD EPYC 2 cores, ..."
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from harness.config.predict import PredictSpec
from harness.plan.cells import Cell
from harness.predict import Prediction
from harness.predict.cpu_kernels import CheckpointShape, mflop, rank_gemm_ms, read_shape
from harness.predict.cpu_machine import engine_threads, probe_seconds
from harness.predict.cpu_step import CpuStep
from harness.predict.cpu_step_fit import CalibrationCell, CalibrationRun, fit, fitted_degrees
from harness.servers.runtime import resolve_checkpoint, resolve_model_path
from harness.store import CellResult


def measured_cells(report: Path) -> list[tuple[Cell, CellResult]]:
    """The report's measured cells of the vLLM CPU engine (bf16 or int8 W8A8 weights, the KV cache as the model's)
    whose workload lengths are known."""
    found = []
    for cell_dir in sorted((report / "runs").iterdir()):
        try:
            cell = Cell.model_validate_json((cell_dir / "cell.json").read_text())
            result = CellResult.model_validate_json((cell_dir / "summary.json").read_text())
        except (OSError, ValueError):
            continue
        summary = result.summary
        if (result.status == "ok" and summary is not None and summary.ttft_ms and summary.tpot_ms
                and cell.workload.mean_lengths() is not None
                and cell.server.precision.weights in ("bf16", "int8") and cell.server.precision.kv_cache == "auto"
                and cell.server.hardware.kind == "cpu"):
            found.append((cell, result))
    return found


def calibration_cell(cell: Cell, result: CellResult, kernels: dict[str, float]) -> CalibrationCell:
    server, summary = cell.server, result.summary
    assert summary is not None and summary.ttft_ms is not None and summary.tpot_ms is not None
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
    return CalibrationCell(
        label=f"{server.model_name}{'' if server.precision.weights == 'bf16' else ' ' + server.precision.weights} "
              f"tp{ranks} {method} c{c}", concurrency=c, input_tokens=isl,
        ttft_ms=summary.ttft_ms.median, tpot_ms=summary.tpot_ms.median,
        gemm_decode_ms=streamed(trunk, c * (k + 1), c * (k + 1)), gemm_prefill_ms=streamed(trunk, c * isl, c),
        mflop_decode=flops(trunk, c * (k + 1), c * (k + 1)), mflop_prefill=flops(trunk, c * isl, c),
        int8_mflop_decode=mflop(trunk.small_int8, c * (k + 1), ranks),
        int8_mflop_prefill=mflop(trunk.small_int8, c * isl, ranks),
        layers=trunk.layers, tp=ranks, method=method, k=k, accepted=accepted, draft_gemm_ms=draft,
        draft_mflop=draft_flops)


def check(run: CalibrationRun, reports: list[Path]) -> None:
    """Predict the cells of ``reports`` with the fit (the acceptance each measured, as a run would once known)."""
    errors: list[float] = []
    single = fit(run)  # a drafter's step at every degree is tp 1's (as the predictor's reference)
    fitted = {tp: fit(run, tp=tp).model_copy(update={"draft_steps": single.draft_steps}) for tp in fitted_degrees(run)}
    for report in reports:
        for cell, result in measured_cells(report):
            summary = result.summary
            assert summary is not None and summary.ttft_ms is not None and summary.tpot_ms is not None
            if cell.server.parallel.tp not in fitted_degrees(run):
                continue
            spec = PredictSpec()
            if summary.speculation is not None and summary.speculation.acceptance_length:
                k = int(getattr(cell.server.speculation.root, "k", 0))
                spec = PredictSpec(accepted_tokens={k: summary.speculation.acceptance_length - 1})
            predictor = CpuStep(spec, costs=fitted[cell.server.parallel.tp], speed_ratio=1.0)
            (out,) = predictor.predict(cell.server, [cell])
            if not isinstance(out, Prediction):
                continue
            ratios = (summary.ttft_ms.median / out.ttft_ms, summary.tpot_ms.median / out.tpot_ms,
                      summary.output_throughput / out.output_tok_s)
            errors += [abs(r - 1) for r in ratios]
            print(f"{report.parent.parent.name:8s} {cell.label:60s} TTFT {ratios[0]:5.2f}  TPOT {ratios[1]:5.2f}  "
                  f"tok/s {ratios[2]:5.2f}")
    if errors:
        print(f"checked: median |measured / predicted - 1| {statistics.median(errors):.1%} over {len(errors)} figures")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", type=Path, help="reports/<matrix> folders of measured runs")
    parser.add_argument("--check", nargs="*", type=Path, default=[], help="folders to predict with the fit")
    parser.add_argument("--out", type=Path, help="write the calibration JSON here")
    parser.add_argument("--measured", default="", help="machine, engine and dates of the runs, for the record")
    args = parser.parse_args()
    kernels: dict[str, float] = {}
    cells = [calibration_cell(cell, result, kernels) for report in args.reports
             for cell, result in measured_cells(report)]
    run = CalibrationRun(measured=args.measured or ", ".join(map(str, args.reports)),
                         probe_s=probe_seconds(), threads=engine_threads(), cells=tuple(cells))
    for tp in fitted_degrees(run):
        print(f"tp {tp}:", fit(run, tp=tp).model_dump(exclude={"source"}))
    check(run, args.check)
    if args.out:
        args.out.write_text(run.model_dump_json(indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
