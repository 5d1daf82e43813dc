"""Predicted / published: the AIConfigurator predictor against InferenceX's points and the capstone lecture's claims.

For each InferenceX point (``published_points.yaml`` beside this script) the script builds the cells of every assumed
layout through the harness's own config models, predicts a sweep of per-rank batch sizes with the registered
``aiconfigurator`` predictor (single-point estimates only, never AIConfigurator's searches), finds where each
layout's predicted tok/s/user crosses the published interactivity, interpolates its tok/s/GPU there, converts it
to InferenceX's unit (input + output tokens: x (isl + osl) / osl) and keeps the best layout. The capstone lecture's
claims are printed apart: predicted output tok/s per replica of the matching matrix cells over the claimed figure.

    .venv/bin/python docs/studies/prediction/predict_vs_published.py [--data POINTS.yaml]

Not part of ``make test``: it is a measurement of the predictor (about 30 s here, most of it loading tables).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml

from harness.config.hardware import GpuHardware
from harness.config.matrix import Matrix, load_matrix
from harness.config.predict import PredictSpec
from harness.plan.cells import Cell
from harness.plan.expand import expand
from harness.predict.aiconfigurator import AiConfigurator
from harness.predict.prediction_record import Prediction

ROOT = Path(__file__).resolve().parents[3]
"""The repository (the claims name its matrices)."""
DATA = Path(__file__).with_name("published_points.yaml")
BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
"""Batch sizes per attention-DP rank swept per layout."""


def layout_label(layout: dict[str, int]) -> str:
    tp, dp, ep = layout.get("tp", 1), layout.get("dp", 1), layout.get("ep", 1)
    if dp > 1:
        return f"DEP{dp}" if tp == 1 and ep == dp else f"TP{tp}xDP{dp}-EP{ep}"
    return f"TP{tp}" + (f"-EP{ep}" if ep > 1 else "")


def sweep_cells(entry: dict[str, Any], layout: dict[str, int], speculation: Any) -> list[Cell]:
    """The cells of one layout at every swept batch, built as a matrix would be."""
    dp = layout.get("dp", 1)
    model = {**entry["model"], "checkpoints": {entry["precision"]: entry["model"]["id"]},
             "max_model_len": entry["isl"] + entry["osl"]}
    matrix = Matrix.model_validate({
        "name": "published", "models": {"m": model},
        "hardware": {"kind": "gpu", "gpu": entry["gpu"], "gpus_per_replica": layout.get("tp", 1) * dp},
        "workloads": {"w": {"kind": "random", "input_tokens": entry["isl"], "output_tokens": entry["osl"]}},
        "axes": {"runtime": [entry["runtime"]], "precision": [entry["precision"]], "parallel": [layout],
                 "speculation": [speculation], "concurrency": [b * dp for b in BATCHES]}})
    return list(expand(matrix).cells)


def curve(predictor: AiConfigurator, cells: list[Cell]) -> list[tuple[float, float, int]]:
    """(tok/s/user, output tok/s/GPU, concurrency) per cell the predictor answered, lightest load first."""
    outcomes = predictor.predict(cells[0].server, cells)
    return [(o.tok_s_user, o.output_tok_s_per_gpu or 0.0, cell.concurrency)
            for cell, o in zip(cells, outcomes, strict=True) if isinstance(o, Prediction)]


def at_interactivity(points: list[tuple[float, float, int]], target: float) -> tuple[float, float] | None:
    """Output tok/s/GPU and concurrency where tok/s/user falls through ``target`` (linear between two batches)."""
    for (user_a, gpu_a, c_a), (user_b, gpu_b, c_b) in zip(points, points[1:], strict=False):
        if user_a >= target >= user_b and user_a != user_b:
            share = (user_a - target) / (user_a - user_b)
            return gpu_a + share * (gpu_b - gpu_a), c_a + share * (c_b - c_a)
    return None


def inferencex(entry: dict[str, Any], predictor: AiConfigurator) -> None:
    print(f"\n{entry['name']}: {entry['source']}")
    print(f"  {entry['precision']} on {entry['gpu']}, {entry['runtime']} tables, {entry['isl']}/{entry['osl']}; "
          "tok/s/GPU in InferenceX's unit (input + output tokens)")
    to_total = (entry["isl"] + entry["osl"]) / entry["osl"]
    curves: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    for layout in entry["layouts"]:
        for name, speculation in (("off", "off"), ("mtp", entry["mtp"])):
            curves[(name, layout_label(layout))] = curve(predictor, sweep_cells(entry, layout, speculation))
    print(f"  {'point':<12}{'published':>11}{'predicted':>11}{'ratio':>7}  {'layout':<14}{'conc. pred/pub':>16}")
    for point in entry["points"]:
        best: tuple[float, float, str] | None = None
        for (name, label), points in curves.items():
            found = at_interactivity(points, point["tok_s_user"]) if name == point["speculation"] else None
            if found and (best is None or found[0] > best[0]):
                best = (found[0], found[1], label)
        tag = f"{point['speculation']} @{point['tok_s_user']}"
        if best is None:
            print(f"  {tag:<12}{point['tok_s_gpu']:>11,.0f}{'-':>11}{'-':>7}  no layout reaches it (or none answered)")
            continue
        predicted = best[0] * to_total
        print(f"  {tag:<12}{point['tok_s_gpu']:>11,.0f}{predicted:>11,.0f}{predicted / point['tok_s_gpu']:>7.2f}  "
              f"{best[2]:<14}{best[1]:>8.0f} / {point['concurrency']}")


def claims(entry: dict[str, Any], predictor: AiConfigurator) -> None:
    print(f"\n{entry['name']} (claims): {entry['source']}")
    plan = expand(load_matrix(ROOT / entry["matrix"]))
    print(f"  {'cell':<46}{'claimed':>9}{'predicted':>11}{'ratio':>7}   output tok/s per replica")
    for gpu in entry["gpus"]:
        for speculation, claimed in entry["claims"].items():
            for concurrency in entry["concurrency"]:
                cell = next(c for c in plan.cells if c.matches({**entry["select"], "speculation": speculation,
                                                                "concurrency": concurrency}))
                hardware = GpuHardware.model_validate({**cell.server.hardware.model_dump(), "gpu": gpu})
                server = cell.server.model_copy(update={"hardware": hardware})
                [outcome] = predictor.predict(server, [cell.model_copy(update={"server": server})])
                label = f"{gpu} {speculation} c{concurrency}"
                if isinstance(outcome, Prediction):
                    print(f"  {label:<46}{claimed:>9,}{outcome.output_tok_s:>11,.0f}"
                          f"{outcome.output_tok_s / claimed:>7.2f}")
                else:
                    print(f"  {label:<46}{claimed:>9,}  no prediction: {outcome.reason[:80]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    data = yaml.safe_load(parser.parse_args().data.read_text())
    predictor = AiConfigurator(PredictSpec())  # the predictor's default acceptance (1.7 at k=3), its own routing
    print(f"predictor: {predictor.cache_key()}")
    for entry in data["inferencex"]:
        inferencex(entry, predictor)
    for entry in data["claims"]:
        claims(entry, predictor)


if __name__ == "__main__":
    main()
