"""The AIConfigurator predictor: NVIDIA's op-level serving model, asked for one point per cell.

``harness.predict.aiconfigurator_inputs`` decides what to ask (and every assumption that takes); this module asks
it through the public single-point API, ``aiconfigurator.cli.api.cli_estimate``, and turns each answer into a
``Prediction`` or the refusal into a ``NoPrediction``. It never runs AIConfigurator's searches (``cli_default``,
``cli_recommend``): those take minutes and answer a different question.

Speed: ``cli_estimate`` spends 1.5-5 s per call resolving the latest data version (parsing every table's YAML
metadata). With the version pinned, as the mapping always does, that step is skipped and the loaded table database
is reused from AIConfigurator's own process-wide cache: the first estimate per (system, engine) loads it (about
1.5-3 s), every later one takes about 20 ms. aiconfigurator is imported inside ``predict`` only (about 1 s).
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.config.hardware import GpuHardware
from harness.config.predict import PredictSpec
from harness.plan.cells import Cell, ServerConfig
from harness.predict.aiconfigurator_inputs import AicInputs, map_inputs
from harness.predict.aiconfigurator_tables import AICONFIGURATOR_VERSION, DATA_VERSIONS
from harness.predict.prediction_record import NoPrediction, Prediction, PredictionOutcome

log = logging.getLogger(__name__)
_MAPPING_REVISION = 2
"""Bump when the mapping's defaults change, so cached predictions made under the old ones are not reused."""
_MEASURED = {"silicon": 1.0, "mixed": 0.5}
"""How much of an op's latency each per_ops_source tag counts as measured ('empirical', 'sol', 'estimated': 0)."""
_INSTALL = f"pip install aiconfigurator=={AICONFIGURATOR_VERSION} aiconfigurator-core=={AICONFIGURATOR_VERSION}"


class AiConfigurator:
    """Predicts GPU cells with AIConfigurator's measured kernel tables (SILICON mode: deterministic)."""

    name = "aiconfigurator"

    def __init__(self, spec: PredictSpec, cache_dir: Path | None = None) -> None:
        # No files of its own: answers take milliseconds once tables are loaded, and the stage caches them.
        del cache_dir
        self._spec = spec
        self._answers: dict[AicInputs, PredictionOutcome] = {}

    def applies(self, server: ServerConfig) -> bool:
        return isinstance(server.hardware, GpuHardware)

    def cache_key(self) -> str:
        # The matrix's predict: section (acceptance, routing) changes answers without changing any cell's id.
        spec = hashlib.sha256(self._spec.model_dump_json().encode()).hexdigest()[:12]
        tables = ", ".join(f"{engine} {version}" for engine, version in DATA_VERSIONS.items())
        return f"aiconfigurator {AICONFIGURATOR_VERSION}; {tables} tables; mapping {_MAPPING_REVISION}; spec {spec}"

    def predict(self, server: ServerConfig, cells: Sequence[Cell]) -> list[PredictionOutcome]:
        api = _import_api()
        if isinstance(api, str):
            return [NoPrediction(cell_id=cell.cell_id, predictor=self.name, reason=api) for cell in cells]
        outcomes: list[PredictionOutcome] = []
        for cell in cells:
            inputs = map_inputs(server, cell, self._spec)
            if isinstance(inputs, str):
                outcomes.append(NoPrediction(cell_id=cell.cell_id, predictor=self.name, reason=inputs))
                continue
            if inputs not in self._answers:  # cells that map to the same point share one estimate
                self._answers[inputs] = self._estimate(api, inputs)
            outcomes.append(self._answers[inputs].model_copy(update={"cell_id": cell.cell_id}))
        return outcomes

    def _estimate(self, api: ModuleType, inputs: AicInputs) -> PredictionOutcome:
        try:
            with _routing(api, inputs.moe_routing), _quiet_library():
                result = api.cli_estimate(inputs.model_path, inputs.system, **inputs.estimate_kwargs())
        # AIConfigurator refuses with ValueError, RuntimeError (OOM), KeyError or its own PerfDataNotAvailableError,
        # which share no base class; each is an answer about this cell, kept as data.
        except Exception as exc:  # noqa: BLE001
            return NoPrediction(cell_id="", predictor=self.name,
                                reason=f"AIConfigurator refused: {type(exc).__name__}: {str(exc)[:400]}")
        raw = result.get()
        figures = {key: float(raw.get(key) or 0.0) for key in ("ttft", "tpot", "tokens/s", "tokens/s/gpu",
                                                                "tokens/s/user")}
        if not all(math.isfinite(v) for v in figures.values()) or min(figures.values()) <= 0:
            return NoPrediction(cell_id="", predictor=self.name,
                                reason=f"AIConfigurator returned no usable figures: {figures}")
        assumptions = dict(inputs.assumptions)
        if result.kv_cache_warning:
            assumptions["kv cache capacity"] = result.kv_cache_warning
        if result.moe_comm_fallbacks:
            assumptions["moe communication"] = f"measured topology substituted: {result.moe_comm_fallbacks}"
        return Prediction(
            cell_id="", predictor=self.name, predictor_version=AICONFIGURATOR_VERSION,
            data_version=inputs.data_version, ttft_ms=figures["ttft"], tpot_ms=figures["tpot"],
            # AIConfigurator's tokens/s and tokens/s/gpu count OUTPUT tokens only (seq/s x osl), over every GPU
            # of the estimated deployment; tokens/s/user is 1000 / TPOT.
            output_tok_s=figures["tokens/s"], output_tok_s_per_gpu=figures["tokens/s/gpu"],
            tok_s_user=figures["tokens/s/user"], assumptions=assumptions, measured_share=measured_share(result))


def measured_share(result: Any) -> float | None:
    """Share of the predicted time that comes from measured ('silicon') table rows rather than formulas.

    Within each step section (aggregated: mixed and decode-only steps; disaggregated: prefill and decode) the share
    is latency-weighted over its ops; sections are weighted by the time a request spends in them. A 'mixed' op (a
    sum of measured and modelled parts, e.g. an MoE kernel with its modelled dispatch) counts half: the report
    does not say how its parts split.
    """
    data, source = result.per_ops_data or {}, result.per_ops_source or {}
    weights = _section_weights(result)
    total = measured = 0.0
    for section, tags in source.items():
        latency = data.get(section, {})
        section_total = sum(float(latency.get(op) or 0.0) for op in tags)
        if section_total <= 0:
            continue
        silicon = sum(float(latency.get(op) or 0.0) * _MEASURED.get(tag, 0.0) for op, tag in tags.items())
        weight = weights.get(section, 1.0)
        total += weight
        measured += weight * silicon / section_total
    return min(1.0, measured / total) if total else None


def _section_weights(result: Any) -> dict[str, float]:
    schedule = (result.per_ops_data or {}).get("scheduling", {})
    if schedule:
        return {"mix_step": float(schedule.get("num_mix_steps", 0)) * float(schedule.get("mix_step_latency_ms", 0)),
                "genonly_step": float(schedule.get("num_genonly_steps", 0))
                * float(schedule.get("genonly_step_latency_ms", 0))}
    return {"prefill": float(result.ttft), "decode": float(result.tpot) * max(result.osl - 1, 1)}


def _import_api() -> ModuleType | str:
    """aiconfigurator's public API module, or why it cannot be used (absent, or not the pinned version)."""
    try:
        installed = metadata.version("aiconfigurator")
    except metadata.PackageNotFoundError:
        return f"aiconfigurator is not installed: {_INSTALL}"
    if installed != AICONFIGURATOR_VERSION:
        return (f"aiconfigurator {installed} is installed; the mapping is written for {AICONFIGURATOR_VERSION} "
                f"exactly (its data versions and quant names): {_INSTALL}")
    return importlib.import_module("aiconfigurator.cli.api")


@contextmanager
def _routing(api: ModuleType, distribution: str | None) -> Iterator[None]:
    """Make ``cli_estimate`` price MoE layers under ``distribution``; it takes no such argument.

    Its model configs come from the module-level ``_build_model_config``; the routing is a field of that config
    (``ModelConfig.workload_distribution``), so the builder is wrapped for this one call. The version pin keeps this
    private name stable.
    """
    if distribution is None:
        yield
        return
    build = api._build_model_config

    def with_routing(*args: Any, **kwargs: Any) -> Any:
        config = build(*args, **kwargs)
        config.workload_distribution = distribution
        return config

    setattr(api, "_build_model_config", with_routing)  # noqa: B010 (a module attribute mypy cannot see)
    try:
        yield
    finally:
        setattr(api, "_build_model_config", build)  # noqa: B010


@contextmanager
def _quiet_library() -> Iterator[None]:
    """Route the library's warnings (table fallbacks it also reports in the result) to this module's debug log:
    without a handler Python prints them to stderr, into the middle of `harness plan`'s output."""
    loggers = [logging.getLogger(name) for name in ("aiconfigurator", "aiconfigurator_core")]
    handler = _ToDebug()
    saved = [(each.propagate, each.handlers[:]) for each in loggers]
    for each in loggers:
        each.propagate = False
        each.handlers = [handler]
    try:
        yield
    finally:
        for each, (propagate, handlers) in zip(loggers, saved, strict=True):
            each.propagate, each.handlers = propagate, handlers


class _ToDebug(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        log.debug("aiconfigurator: %s", record.getMessage())
