"""What a plan will cost before anything runs: device-hours and dollars, an ESTIMATE from stated priors.

Run time is not known until cells are measured, so it is estimated from the matrix's workload sizes and a few
priors, each printed beside the result: how fast one request streams (tok/s per user), how much one replica can
serve at most (tok/s per replica), time to first token, and how long a server takes to start. A cell at
concurrency c streams ``min(c x per-user, per-replica)`` output tokens/s (capped again by a request rate, when one
is set); its requests, warm-up included, take their output tokens over that rate plus one TTFT per wave of c
requests. Every launch adds the start time. Prices come from ``harness.analysis.cost`` (the matrix's overrides applied).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from harness.analysis.cost import ReplicaPrice, load_price_table, replica_price
from harness.config.hardware import EstimateSpec
from harness.config.matrix import Matrix
from harness.load.prompts import kind_of
from harness.plan.cells import Cell, Plan, ServerGroup
from harness.predict import PlanPredictions, Prediction
from harness.profiling import nsys_cpu_cells, nsys_floor_s, window_for

_REPORT_WRITING_S = 30.0
"""nsys writing a 20 s window's report and its summaries after the window (measured 12-15 s on 2 cores,
2026-11-26: from the window's end to the stored summary), with a margin."""


@dataclass(frozen=True, slots=True)
class Priors:
    tok_s_per_user: float
    tok_s_per_replica: float
    ttft_s: float
    server_start_s: float
    output_tokens: int
    source: str


DEFAULT_PRIORS: dict[str, Priors] = {
    "gpu": Priors(tok_s_per_user=50.0, tok_s_per_replica=6500.0, ttft_s=0.5, server_start_s=900.0,
                  output_tokens=256, source="defaults for GPUs: the capstone lecture §1.4 (about 6,500 tok/s per "
                  "DeepSeek-V3.1 replica without speculation), 50 tok/s/user = 20 ms TPOT, 15 min to load and warm a "
                  "large MoE checkpoint"),
    "cpu": Priors(tok_s_per_user=45.0, tok_s_per_replica=175.0, ttft_s=0.06, server_start_s=75.0,
                  output_tokens=64, source="defaults for the CPU: vLLM's CPU build, 2 cores (175 output tok/s "
                  "and 22.6 ms TPOT at concurrency 4; ready 50-75 s after launch on the tiny fixtures)"),
}


def priors_for(matrix: Matrix) -> Priors:
    """The hardware kind's defaults with the matrix's ``estimate`` values laid over them."""
    base, given = DEFAULT_PRIORS[matrix.hardware.kind], matrix.estimate
    priors = [name for name in EstimateSpec.model_fields if name != "max_machine_hours"]  # a bound, not a prior
    overrides = {k: v for k, v in given.model_dump(include=set(priors)).items() if v is not None}
    source = base.source if not overrides else f"matrix estimate section ({', '.join(overrides)}); else {base.source}"
    values = {name: overrides.get(name, getattr(base, name)) for name in priors}
    return Priors(**values, source=source)


def cell_seconds(cell: Cell, priors: Priors, predicted: Prediction | None = None) -> float:
    """Estimated wall time of one cell: warm-up and every run (its repeats, or as many as its minimum measured
    duration takes); from its prediction where it has one (output tok/s of the replica and TTFT), else from the
    priors."""
    workload, concurrency = cell.workload, cell.concurrency
    output = getattr(workload, "output_tokens", None) or priors.output_tokens
    rate = min(concurrency * priors.tok_s_per_user, priors.tok_s_per_replica)
    ttft_s = priors.ttft_s
    if predicted is not None:
        rate, ttft_s = predicted.output_tok_s, predicted.ttft_ms / 1e3
    if cell.load.request_rate is not None:
        rate = min(rate, cell.load.request_rate * output)
    # a unit may be several requests: an agent workload counts sessions
    measured = round(workload.requests_for(concurrency) * kind_of(workload).requests_per_unit())

    def run(requests: int) -> float:
        seconds = requests * output / rate + math.ceil(requests / concurrency) * ttft_s
        return min(seconds, cell.load.duration_s) if cell.load.duration_s else seconds

    one = run(measured)
    runs = cell.repeats
    if cell.min_measured_s is not None and one > 0:  # runs again until its minimum is measured
        runs = min(max(runs, math.ceil(cell.min_measured_s / one)), cell.most_runs)
    return run(workload.warmup_requests) + runs * one


@dataclass(frozen=True, slots=True)
class PlanEstimate:
    priors: Priors
    price: ReplicaPrice
    launches: int
    start_s: float
    load_s: float
    device_s: float
    """Seconds each launch holds its devices, times those devices (a deployment holds all of its servers')."""
    predicted_cells: int = 0
    """Cells whose load time comes from their prediction rather than the priors."""
    captures: int = 0
    """CPU cells captured under Nsight Systems, each in a launch of its own (``profile.nsys_cells``)."""
    capture_s: float = 0.0
    """Seconds those launches take: the start, the margin before the window, the window, the report's writing."""
    cells: int = 0
    predictors: tuple[str, ...] = ()

    @property
    def hours(self) -> float:
        return (self.start_s + self.load_s + self.capture_s) / 3600

    @property
    def device_hours(self) -> float:
        return self.device_s / 3600

    @property
    def usd(self) -> float | None:
        usd = self.price.usd_per_device_hour
        return usd * self.device_hours if usd is not None else None


def estimate(plan: Plan, base_dir: Path | None = None, predictions: PlanPredictions | None = None) -> PlanEstimate:
    """The plan's run time, device-hours and dollars: each cell's load time from its prediction where it has one,
    from the priors otherwise (skipped servers cost nothing)."""
    priors = priors_for(plan.matrix)
    price = replica_price(plan.matrix, load_price_table(plan.matrix.cost, base_dir or Path.cwd()))
    # each configuration is launched as often as its most-launched cell; each launch measures the cells owed it. A
    # deployment is running already: its rounds cost their load, never a start
    launches = {g.server.server_id: max(plan.launches_of(c) for c in g.cells) if g.cells else plan.rounds()
                for g in plan.groups if not g.server.is_deployment}
    loads = {g.server.server_id: _load_seconds(plan, g, priors, predictions) for g in plan.groups}
    predicted = [c for c in plan.cells if predictions and predictions.prediction(c.cell_id)]
    spec = plan.matrix.profile
    windows = [window_for(priors.server_start_s, spec.nsys_window_s, floor_s=nsys_floor_s(spec, cell))
               for cell in nsys_cpu_cells(spec, plan.cells)] if spec else []
    captures = len(windows)
    capture_s = sum(window.delay_s + window.window_s + _REPORT_WRITING_S for window in windows)
    total = sum(launches.values())
    return PlanEstimate(priors=priors, price=price, launches=total,
                        captures=captures, capture_s=capture_s,
                        start_s=total * priors.server_start_s,
                        load_s=sum(loads.values()),
                        device_s=sum((launches.get(g.server.server_id, 0) * priors.server_start_s
                                      + loads[g.server.server_id]) * price.for_server(g.server).devices
                                     for g in plan.groups),
                        predicted_cells=len(predicted), cells=len(plan.cells),
                        predictors=predictions.predictors if predictions else ())


def _load_seconds(plan: Plan, group: ServerGroup, priors: Priors, predictions: PlanPredictions | None = None,
                  *, one_launch: bool = False) -> float:
    """The group's cells over all their launches (``one_launch``: on the first), and each SLO search at its probe
    limit, every probe priced at the middle of its range (a search stops earlier when it brackets the SLO: an
    upper bound)."""
    def times(cell: Cell) -> int:
        return 1 if one_launch else plan.launches_of(cell)

    probes = [(s.spec.max_probes, s.probe(_middle(s.spec.min, s.spec.max, s.integral))) for s in group.searches]
    searches = sum(count * cell_seconds(probe, priors) * times(probe) for count, probe in probes)
    return sum(cell_seconds(c, priors, predictions.prediction(c.cell_id) if predictions else None) * times(c)
               for c in group.cells) + searches


def _middle(low: float, high: float, integral: bool) -> float:
    middle = (low * high) ** 0.5  # the doubling spends as many probes below the geometric middle as above it
    return float(max(1, round(middle))) if integral else middle


def group_estimate(plan: Plan, group: ServerGroup, base_dir: Path | None = None) -> tuple[float, float,
                                                                                         float | None]:
    """One server group's launch (a Slurm job): estimated hours, device-hours and dollars, under the plan's
    priors."""
    priors = priors_for(plan.matrix)
    price = replica_price(plan.matrix, load_price_table(plan.matrix.cost, base_dir or Path.cwd()))
    price = price.for_server(group.server)
    hours = (priors.server_start_s + _load_seconds(plan, group, priors, one_launch=True)) / 3600
    usd = price.usd_per_hour * hours if price.usd_per_hour is not None else None
    return hours, hours * price.devices, usd


def render_estimate(est: PlanEstimate) -> list[str]:
    """The estimate as text, labelled as one, with every assumption it rests on."""
    p, price = est.priors, est.price
    unit = "GPU" if price.unit == "GPU" else price.unit
    basis = (f"  load time of {est.predicted_cells} of {est.cells} cells from their PREDICTION "
             f"({', '.join(est.predictors)}; above), the rest from the priors below" if est.predicted_cells
             else "  every cell's load time from the priors below (no predictor answered for this plan)")
    lines = ["ESTIMATE (not a measurement) of what this plan costs to run:", basis,
             f"  assumptions: {p.tok_s_per_user:g} output tok/s per user, at most {p.tok_s_per_replica:g} tok/s "
             f"per replica, TTFT {p.ttft_s:g} s, {p.server_start_s:g} s per server start, "
             f"{p.output_tokens} output tokens where a workload leaves them open",
             f"  priors from: {p.source}",
             f"  run time: {est.hours:.2f} h = {est.launches} launches x {p.server_start_s:g} s "
             f"+ {est.load_s / 3600:.2f} h of load (warm-up and repeats included)"
             + (f" + {est.captures} nsys capture launch(es), {est.capture_s / est.captures:.0f} s each"
                if est.captures else ""),
             f"  {unit}-hours: {est.device_hours:.1f} (each launch's hours x the {unit}s it holds: {price.devices} "
             f"per replica, every server of a deployment)"]
    if est.usd is None:
        lines.append(f"  cost: unknown ({price.source})")
    else:
        lines.append(f"  cost: ${est.usd:,.2f} at ${price.usd_per_device_hour:,.2f} per {unit}-hour "
                     f"({price.source})")
    return lines
