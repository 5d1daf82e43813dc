"""How the gate judges a run (``gates:``): the figures it gates, the tolerance a figure may move the wrong way, how
the machine's speed enters a timing verdict, and the history rule (``gates.history``) over the results history.

The gate itself is ``harness.verdict``; the change points it reads are ``harness.history.trend``'s. This module is
the schema only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from harness.config.strict_model import StrictModel

GATED_METRICS = ("output_throughput", "interactivity", "ttft_ms.median", "tpot_ms.median", "itl_ms.median",
                 "error_rate", "speculation.acceptance_rate")


class HistorySpec(StrictModel):
    """How the gate reads the results history (``harness.history.trend``): change points found by Apache Otava."""

    use: bool = Field(True, description="judge each gated figure by its history too (a step at the newest runs "
                                        "regresses or improves it; a long flat history is said)")
    max_pvalue: float = Field(0.005, gt=0, lt=0.5, description="significance a step needs (re-tested by Student's t), "
                              "and the false discovery rate the run's steps are held to together (Benjamini-Hochberg "
                              "over every gated figure of the run)")
    recent: int = Field(4, ge=1, le=20, description="a change point among the newest this many runs judges the "
                                                    "run being gated")
    persist: int = Field(2, ge=1, le=20, description="runs at or after a step, the gated one included, before it "
                                                     "counts: a real regression is a step that persists, noise is not")
    flat_runs: int = Field(8, ge=3, le=200, description="runs without a change point that make a history flat")


class GateSpec(StrictModel):
    tolerance: float = Field(0.10, gt=0, lt=1, description="relative change a gated metric may move the wrong way")
    machine_speed: Literal["guard", "adjust", "none"] = Field(
        "guard", description="how the machine-speed probe (harness.calibration) enters timing verdicts. guard: "
                             "judge the figures as measured, but when this run's machine ran slower (faster) than "
                             "the baseline's by more than the tolerance, a timing regression (pass) it could explain "
                             "is inconclusive; adjust: scale this run's timings by the probes' speed ratio first "
                             "(sound only where the engine slows in proportion to the probe: README); none: take no "
                             "probes (about 40 s of both cores a run on a 2-core machine) and judge timings as "
                             "measured, for a run that checks what the engine does rather than how fast")
    speed_exponent: float = Field(
        3.0, gt=0, le=10, description="how much more the engine's timings move than the probe: the engine runs at "
                                      "(probe speed)^exponent. 3 was measured on the 2-core CPU VM this project "
                                      "runs on (README: a neighbour slowed the probe to 0.67x and the engine to "
                                      "0.18-0.40x); 1 is the proportion a machine with idle cores should show")
    min_load_s: float | None = Field(
        None, gt=0, description="a cell whose measured load lasted less than this in a launch of the run is not "
                                "judged on its timings (inconclusive, with its seconds): on a shared machine a stall "
                                "of a second moved a one-second cell's TPOT by 62% (2026-11-28); errors and "
                                "acceptance are judged as usual. Unset: every cell's timings are judged")
    baseline: str | None = Field(None, description="path of the baseline file; default lock/<matrix>.baseline.json")
    metrics: tuple[str, ...] = Field(
        GATED_METRICS, min_length=1,
        description="gated figures: a METRICS name, with .median/.p90/.p99 for latency distributions (checked "
                    "against the declared metrics when the plan is loaded: harness.verdict.gate)",
    )
    history: HistorySpec = Field(HistorySpec(), description="the history rule of the gate (change points over runs)")
