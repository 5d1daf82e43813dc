"""``cpu-step``: a step-cost model of vLLM's CPU engine, so the default's cells are predicted before they launch.

A step carrying ``n`` tokens of ``q`` sequences costs the engine's own work per trunk layer, the compute through
the matrices that stay in cache, and the GEMMs over those that stream::

    step(q, n) = L * (a + s*q) + p * flops(n) + streamed(n)

``streamed`` is measured on this machine with the kernel the engine will call and ``flops`` counted from the
checkpoint (``cpu_kernels``), each rank's share of every matrix on its own cores, the LM head on the rows that need
logits only. ``a`` (per layer and step), ``s`` (per layer and sequence), ``p`` (per cached MFLOP) and ``t0`` are the
engine's own costs at the cell's tensor-parallel degree, fitted on the committed calibration (``cpu_step_fit``,
named in every prediction) and scaled to this machine by the machine-speed probe's parts (interpreter work and
small bf16 kernels) against the calibration machine's.

Arrivals follow the harness's closed loop: the first ``c`` users start together and their prompts are prefilled in
one step. Without speculation and with fixed lengths every later wave starts together too (all ``c`` finish on the
same step); with speculation, requests finish on different steps, so later prompts arrive one at a time and are
prefilled inside a step the others decode in (``staggered``)::

    together:   TTFT = t0 + step(c, c*isl)                       TPOT = iteration / (1 + accepted)
    staggered:  TTFT = t0 + iteration/2 + mixed                  TPOT = iteration / (1 + accepted)
                                                                        + (c - 1) * (mixed - iteration) / (osl - 1)

where ``iteration`` is one verify step of ``k+1`` tokens a sequence plus the drafting steps, ``mixed`` the same with
one prompt prefilled in it, ``t0`` the request path outside the engine's step, and ``accepted`` the mean accepted
draft tokens a step (an assumption until measured). The median over the cell's requests is the together figure when
most requests started together, the staggered one when most did not, and their mean at one half. Output tok/s of a
replica is ``c * osl / (TTFT + (osl - 1) * TPOT)``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.config.predict import PredictSpec
from harness.plan.cells import Cell, ServerConfig
from harness.predict.cpu_kernels import CheckpointShape, Linear, mflop, rank_gemm_ms, read_shape
from harness.predict.cpu_machine import engine_threads, host_key, load_kernels, probe_seconds, save_kernels
from harness.predict.cpu_step_fit import LOOKUP_METHODS, EngineCosts, fit, fitted_degrees, load_calibration
from harness.predict.prediction_record import NoPrediction, Prediction, PredictionOutcome
from harness.servers.runtime import resolve_checkpoint, resolve_model_path

VERSION = "3.1"


@functools.cache
def reference(tp: int = 1) -> EngineCosts | None:
    """The committed calibration's costs at ``tp`` (with tp 1's drafting steps), fitted once per process; None
    when the calibration has no cell at that degree."""
    run = load_calibration()
    if tp not in fitted_degrees(run):
        return None
    costs = fit(run, tp=tp)
    single = reference(1) if tp != 1 else None
    return costs.model_copy(update={"draft_steps": single.draft_steps}) if single is not None else costs


EARLIER_DRAFT_STEPS: dict[str, float] = {"mtp": 3.4, "eagle3": 0.7, "eagle": 0.7, "draft_model": 0.7, "ngram": 1.5,
                                         "suffix": 1.5}
"""A drafting step's fixed cost in units of the trunk's, by method, for methods the calibration has no cells of:
fitted on the c1 cells of the committed default baseline of 2026-11-23 (another machine; MTP k=1 on the DeepSeek
fixture, EAGLE-3 and n-gram on the Qwen3 one)."""


def draft_multiple(costs: EngineCosts, method: str) -> tuple[float, str]:
    """A method's drafting step in units of the trunk's fixed step cost, and where the figure comes from."""
    if method in costs.draft_steps:
        return costs.draft_steps[method], "fitted on the calibration's speculative c1 cells"
    return (EARLIER_DRAFT_STEPS.get(method, EARLIER_DRAFT_STEPS["eagle3"]),
            "the calibration has no cell of this method: from the 2026-11-23 default baseline's c1 cells, another "
            "machine")


DEFAULT_ACCEPTANCE = 0.6
"""Per-position acceptance of a drafted token when the matrix states none: accepted = sum of 0.6^i, i = 1..k."""


@dataclass(frozen=True)
class _Shapes:
    trunk: CheckpointShape
    drafter: CheckpointShape | None


class CpuStep:
    """Predicts vLLM CPU cells from kernels timed here and the engine's reference per-step costs."""

    name = "cpu-step"

    def __init__(self, spec: PredictSpec, cache_dir: Path | None = None, speed_ratio: float | None = None,
                 costs: EngineCosts | None = None) -> None:
        self.spec = spec
        self._speed_ratio = speed_ratio
        self._costs = costs
        self.kernel_file = cache_dir / "cpu-step-kernels.json" if cache_dir else None
        self.kernels = load_kernels(self.kernel_file)

    @property
    def speed_ratio(self) -> float:
        """How much longer the engine's own work takes here than on the calibration machine (>1: slower), by the
        probe, in steps of 0.05 so that cached predictions stay valid while the machine's speed wanders inside one."""
        if self._speed_ratio is None:
            self._speed_ratio = round(probe_seconds() / self.costs_at(1).probe_s / 0.05) * 0.05
        return self._speed_ratio

    def costs_at(self, tp: int) -> EngineCosts:
        """The engine's per-step costs at ``tp``: those given, else the committed calibration's fit."""
        if self._costs is not None:
            return self._costs
        found = reference(tp)
        if found is None:
            raise LookupError(tp)
        return found

    def applies(self, server: ServerConfig) -> bool:
        return server.hardware.kind == "cpu" and server.runtime == "vllm"

    def cache_key(self) -> str:
        # A new calibration is a new question; this machine's speed factor is measured once per machine and cached
        # with the answers, so a warm plan neither probes nor moves with a neighbour's load.
        costs = self._costs.model_dump_json(exclude={"source"}) if self._costs else load_calibration().model_dump_json()
        return f"cpu-step {VERSION} costs {costs} on {host_key()}"

    def predict(self, server: ServerConfig, cells: Sequence[Cell]) -> list[PredictionOutcome]:
        self.ranks = server.parallel.tp
        self.threads = getattr(server.hardware, "threads", None) or engine_threads(self.ranks)
        try:
            return self._predict(server, cells)
        finally:
            save_kernels(self.kernel_file, self.kernels)

    def _predict(self, server: ServerConfig, cells: Sequence[Cell]) -> list[PredictionOutcome]:
        why = self._unsupported(server)
        shapes = None
        if why is None:
            try:
                shapes = self._shapes(server)
            except FileNotFoundError as missing:
                why = f"checkpoint not on disk yet ({missing.filename}); `harness fixtures` builds it"
        out: list[PredictionOutcome] = []
        for cell in cells:
            lengths = cell.workload.mean_lengths()
            if why or shapes is None:
                out.append(NoPrediction(cell_id=cell.cell_id, predictor=self.name, reason=why or "no checkpoint"))
            elif lengths is None:
                out.append(NoPrediction(cell_id=cell.cell_id, predictor=self.name,
                                        reason=f"workload {cell.workload_name}'s lengths are not known before it runs"))
            else:
                out.append(_Cell(self, server, cell, shapes, *lengths).prediction())
        return out

    def _unsupported(self, server: ServerConfig) -> str | None:
        if server.parallel.dp * server.parallel.ep != 1:
            return f"parallel {server.parallel.label}: the CPU step model covers tensor parallelism only"
        if not server.topology.is_colocated:
            return f"topology {server.topology.label}: the CPU step model covers one server"
        try:
            self.costs_at(server.parallel.tp)
        except LookupError:
            return (f"parallel {server.parallel.label}: the committed calibration has no cell at tp "
                    f"{server.parallel.tp} (`python -m tools.refit_cpu_step` adds them from a measured run)")
        return None

    def _shapes(self, server: ServerConfig) -> _Shapes:
        trunk = read_shape(Path(resolve_model_path(server)))
        draft_id = server.speculation.draft_model
        return _Shapes(trunk, read_shape(Path(resolve_checkpoint(draft_id))) if draft_id else None)

    def gemm_ms(self, linears: tuple[Linear, ...], tokens: int) -> float:
        """One rank's share of ``linears`` over ``tokens`` rows, on that rank's threads."""
        return rank_gemm_ms(linears, tokens, self.ranks, self.threads, self.kernels)

    def accepted(self, method: str, k: int, assumptions: dict[str, str]) -> float:
        """Accepted draft tokens a step at ``k``: the matrix's, else the default's; said in ``assumptions``."""
        stated = self.spec.accepted(method, k)
        if stated is not None:
            accepted = stated[0]
            assumptions["acceptance"] = f"{accepted:g} accepted draft tokens a step at k={k} ({stated[1]})"
        else:
            accepted = sum(DEFAULT_ACCEPTANCE**i for i in range(1, k + 1))
            assumptions["acceptance"] = (f"{accepted:.2f} accepted a step at k={k} (default: each drafted token "
                                         f"accepted with {DEFAULT_ACCEPTANCE}; set predict.accepted_tokens)")
        return accepted


class _Cell:
    """One cell's prediction: the module's formulas with this cell's numbers, and what they assumed."""

    def __init__(self, model: CpuStep, server: ServerConfig, cell: Cell, shapes: _Shapes, isl: int,
                 osl: int) -> None:
        self.model, self.cell, self.shapes, self.isl, self.osl = model, cell, shapes, isl, osl
        self.costs, self.r = model.costs_at(server.parallel.tp), model.speed_ratio
        self.c, self.layers = cell.concurrency, shapes.trunk.layers
        self.method = server.speculation.method
        self.k = int(getattr(server.speculation.root, "k", 0)) if self.method != "off" else 0
        ref, trunk = self.costs, shapes.trunk
        self.assumptions = {
            "engine step costs": f"per layer a {ref.a_ms:.3g} ms and s {ref.s_ms:.3g} ms/seq, p {ref.p_ms:.3g} ms "
                                 f"per cached MFLOP, t0 {ref.t0_ms:.3g} ms, at tp {server.parallel.tp}, {ref.source} "
                                 "(cpu_step_calibration.json: where and when measured); "
                                 f"scaled x{self.r:.2f} by this machine's probe against the calibration machine's",
            "GEMMs": f"{len(trunk.trunk)} streamed matrices timed here ({model.threads} thread(s) a rank, "
                     f"{model.ranks} rank(s)); {len(trunk.small) + len(trunk.cached_head)} cached ones of "
                     f"{self.layers} layers counted in FLOPs"}
        if shapes.trunk.small_int8 and ref.p_int8_ms is not None:
            free = "; no cost to be told from none on those cells" if ref.p_int8_ms == 0 else ""
            self.assumptions["weights"] = (f"{len(shapes.trunk.small_int8)} int8 matrices' FLOPs at {ref.p_int8_ms:.3g}"
                                           f" ms per MFLOP, fitted on the calibration's int8 W8A8 cells{free}")
        elif server.precision.quantized:
            self.assumptions["weights"] = (f"{server.precision.weights}: the checkpoint's matrices priced as bf16 (the "
                                           "step model has no measurements of the engine's kernels for them)")

    def step(self, seqs: int, tokens: int, logits: int) -> float:
        """One engine step of ``tokens`` tokens of ``seqs`` sequences, ``logits`` rows through the LM head."""
        return self._engine(seqs, 1.0) + self._compute(self.shapes.trunk, tokens, logits)

    def _engine(self, seqs: int, multiple: float) -> float:
        ref = self.costs
        return self.r * self.layers * (multiple * ref.a_ms + ref.s_ms * seqs)

    def _compute(self, shape: CheckpointShape, tokens: int, logits: int, mtp: bool = False) -> float:
        """The cached matrices' FLOPs at the engine's fitted rates (bf16, and int8 where the checkpoint stores int8
        weights), and the streamed ones as timed here."""
        model, ref = self.model, self.costs
        flops = 0.0 if mtp else mflop(shape.small, tokens, model.ranks)
        flops += mflop(shape.cached_head, logits, model.ranks)
        int8 = 0.0 if mtp else mflop(shape.small_int8, tokens, model.ranks)
        int8_rate = ref.p_int8_ms if ref.p_int8_ms is not None else ref.p_ms
        streamed = model.gemm_ms(shape.mtp if mtp else shape.trunk, tokens) + model.gemm_ms(shape.streamed_head, logits)
        return self.r * (ref.p_ms * flops + int8_rate * int8) + streamed

    def draft(self, tokens: int) -> float:
        """One drafting step over ``tokens`` tokens: its fixed cost, then the MTP module's or the drafter's
        matrices (a lookup drafter has none)."""
        fixed = self._engine(self.c, draft_multiple(self.costs, self.method)[0])
        if self.method == "mtp":
            return fixed + self._compute(self.shapes.trunk, tokens, self.c, mtp=True)
        if self.shapes.drafter is not None:
            return fixed + self._compute(self.shapes.drafter, tokens, self.c)
        return fixed

    def prompt_draft(self, tokens: int) -> float:
        """What a drafting model spends reading prompts of ``tokens`` tokens before the first token (a lookup
        drafter reads nothing)."""
        return self.draft(tokens) if self.k and self.method not in LOOKUP_METHODS else 0.0

    def prediction(self) -> Prediction:
        c, k, isl, osl, ref = self.c, self.k, self.isl, self.osl, self.costs
        lookup = self.method in LOOKUP_METHODS
        drafts = (1 if lookup else k) if k else 0
        accepted = self.model.accepted(self.method, k, self.assumptions) if k else 0.0
        iteration = self.step(c, c * (k + 1), c * (k + 1)) + drafts * self.draft(c)
        ttft = self.r * ref.t0_ms + self.step(c, c * isl, c) + self.prompt_draft(c * isl)
        tpot = iteration / (1 + accepted)
        workload = self.cell.workload
        fixed_lengths = workload.ignore_eos and getattr(workload, "range_ratio", None) == 0.0
        together = c / workload.requests_for(c)
        if c > 1 and (k or not fixed_lengths) and together <= 0.5:
            decoding = (c - 1) * (k + 1)
            mixed = self.step(c, decoding + isl, decoding + 1) + drafts * self.draft(c) + self.prompt_draft(isl)
            late = (self.r * ref.t0_ms + iteration / 2 + mixed, tpot + (c - 1) * (mixed - iteration) / max(osl - 1, 1))
            ttft, tpot = late if together < 0.5 else ((ttft + late[0]) / 2, (tpot + late[1]) / 2)
            self.assumptions["arrivals"] = (
                f"closed loop: {together:.0%} of the requests start together (prefilled in one step), the rest "
                "arrive one at a time, prefilled inside a step the others decode in (requests finish on different "
                "steps); the median is " + ("the latter's" if together < 0.5 else "the mean of both"))
        else:
            self.assumptions["arrivals"] = ("closed loop: each wave of users' prompts prefilled in one step, then "
                                            "decoded together")
        if k:
            multiple, source = draft_multiple(ref, self.method)
            self.assumptions["draft cost"] = (f"{self.method}: a drafting step's fixed cost {multiple:g} x the "
                                              f"trunk's ({source})")
        latency_s = (ttft + (osl - 1) * tpot) / 1e3
        return Prediction(cell_id=self.cell.cell_id, predictor=CpuStep.name, predictor_version=VERSION,
                          data_version="GEMMs timed on this machine; engine costs from the committed calibration",
                          ttft_ms=ttft, tpot_ms=tpot, output_tok_s=c * osl / latency_s, output_tok_s_per_gpu=None,
                          tok_s_user=1e3 / tpot, assumptions=self.assumptions)
