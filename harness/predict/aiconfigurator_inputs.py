"""What AIConfigurator is asked for one cell: the pure translation of a harness cell into its single-point inputs.

This module owns the mapping only (model id to a bundled config, GPU to a system, precision to quant modes,
``{tp, dp, ep}`` to attention TP/DP and MoE TP/EP, concurrency to a per-rank batch, speculation to ``nextn``,
topology to aggregated or disaggregated mode) and every assumption the mapping makes. It never imports
aiconfigurator, so it is tested without it; calling the library is ``harness.predict.aiconfigurator``'s business.
A cell that cannot be mapped gets a reason string, which the predictor turns into a ``NoPrediction``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from harness.config.matrix import GpuHardware
from harness.config.predict import PredictSpec
from harness.config.topology import Disaggregated, Replicas
from harness.plan.cells import Cell, ServerConfig
from harness.predict.routing_fit import measured_routing

AICONFIGURATOR_VERSION = "0.12.0"
DATA_VERSIONS = {"sglang": "0.5.14", "vllm": "0.24.0"}
"""The engine versions whose kernel tables 0.12.0 ships for every system below ('current' in query_versions.yaml)."""
SYSTEMS = {"B200": "b200_sxm", "B300": "b300_sxm", "GB200": "gb200", "GB300": "gb300", "H100": "h100_sxm",
           "H200": "h200_sxm"}
_HOPPER = frozenset({"h100_sxm", "h200_sxm"})
_RACK_GPUS = {"gb200": 72, "gb300": 72}  # NVL72: one NVLink domain; a deployment beyond it is not what the tables hold
_NODE_GPUS = {"b200_sxm": 8, "b300_sxm": 8, "h100_sxm": 8, "h200_sxm": 8}  # HGX nodes (systems/<system>.yaml)
_EP_NODE_GPUS = _NODE_GPUS | {"gb200": 4, "gb300": 4}
"""num_gpus_per_node of each system (systems/<system>.yaml): a GB200/GB300 compute tray holds 4 GPUs, although the
NVLink domain is the 72-GPU rack. AIConfigurator calls EP wider than this cross-node EP."""
_DEEPEP = re.compile(r"deepep", re.IGNORECASE)
"""moe_a2a_backend spellings that run DeepEP's all-to-all, the only cross-node EP AIConfigurator prices."""
ROUTINGS = ("power_law_1.01", "power_law_1.2", "balanced")
"""MoE routing distributions 0.12.0 holds MoE tables for (moe_perf.parquet 'distribution')."""
_QUANT = {"bf16": ("bfloat16", "bfloat16"), "fp16": ("bfloat16", "bfloat16"), "fp8": ("fp8_block", "fp8_block"),
          "fp4": ("nvfp4", "nvfp4")}
"""Weight precision -> (gemm, moe) quant modes. Every FP8 checkpoint mapped below is 128x128 block-scaled
(config.json weight_block_size), hence fp8_block; fp4 is ModelOpt NVFP4."""

# Accepted-token defaults when the matrix's predict.accepted_tokens says nothing for k. Position 1 accepts 0.85
# (DeepSeek-V3 technical report, sec. 5.4.3: the second token is accepted 85-90% of the time); each further drafted
# position keeps 0.618 of the one before, which gives 1.70 at k=3: the assumption shared/reference/predict.md
# used against InferenceX's DeepSeek-R1 MTP points. So k=1 -> 0.85, k=2 -> 1.38, k=3 -> 1.70, k=4 -> 1.90.
_FIRST_ACCEPT, _DECAY = 0.85, 0.618


@dataclass(frozen=True, slots=True)
class _Bundled:
    """Bundled AIConfigurator configs of one model, by weight precision."""

    name: str
    configs: dict[str, str]
    kv_auto: dict[str, tuple[str, str]]
    """Precision -> the KV dtype the engines pick for ``kv_cache: auto`` on that checkpoint, and why."""
    quant: dict[str, tuple[str, str]] = field(default_factory=dict)
    """'precision' or 'precision/engine' -> (gemm, moe) where the checkpoint departs from ``_QUANT``."""


_BF16_KV = ("bfloat16", "the checkpoint ships no KV scales, so the engines keep the model dtype")
_NVFP4_KV = ("fp8", "the NVFP4 checkpoint declares an FP8 KV cache (hf_quant_config kv_cache_quant_algo)")
_MODELS = {
    "deepseek-v3.1": _Bundled("DeepSeek-V3.1", {"fp8": "deepseek-ai/DeepSeek-V3", "fp4": "nvidia/DeepSeek-V3.1-NVFP4"},
                              {"fp8": _BF16_KV, "fp4": _NVFP4_KV}),
    "deepseek-v3": _Bundled("DeepSeek-V3", {"fp8": "deepseek-ai/DeepSeek-V3"}, {"fp8": _BF16_KV}),
    "deepseek-r1": _Bundled("DeepSeek-R1", {"fp8": "deepseek-ai/DeepSeek-R1"}, {"fp8": _BF16_KV}),
    # V4-Pro's own release: FP4 (MX) experts with FP8 activations, block-FP8 elsewhere, FP8 KV by design; 0.12.0
    # has no NVFP4 MoE tables for its expert shape, so only the native checkpoint maps.
    "deepseek-v4-pro": _Bundled("DeepSeek-V4-Pro", {"mxfp4": "deepseek-ai/DeepSeek-V4-Pro"},
                                {"mxfp4": ("fp8", "V4's attention stores an FP8 KV cache natively")},
                                {"mxfp4/sglang": ("fp8_block", "w4a8_mxfp4_mxfp8_trtllm"),
                                 "mxfp4/vllm": ("fp8_block", "w4a8_mxfp4_mxfp8")}),
    "qwen3-235b-a22b": _Bundled("Qwen3-235B-A22B", {"bf16": "Qwen/Qwen3-235B-A22B", "fp8": "Qwen/Qwen3-235B-A22B-FP8",
                                                    "fp4": "nvidia/Qwen3-235B-A22B-NVFP4"},
                                {"bf16": _BF16_KV, "fp8": _BF16_KV, "fp4": _NVFP4_KV}),
}
_FAMILIES = {"deepseek-v31": "deepseek-v3.1", "deepseek-v3": "deepseek-v3"}
"""Families that name one architecture (a local model path still maps); 'qwen3' spans many sizes, so it does not."""


class _Unmappable(Exception):
    """A cell AIConfigurator cannot be asked about; the message is the NoPrediction reason."""


@dataclass(frozen=True, slots=True)
class AicInputs:
    """One single-point AIConfigurator estimate (``cli_estimate``), every quant mode explicit."""

    model_path: str
    system: str
    backend: str
    backend_version: str
    isl: int
    osl: int
    tp_size: int
    attention_dp_size: int
    moe_tp_size: int
    moe_ep_size: int
    batch_size: int
    """Per attention-DP rank (of each decode worker in disaggregated mode)."""
    gemm_quant: str
    moe_quant: str
    kv_quant: str
    fmha_quant: str
    nextn: int = 0
    nextn_accepted: float | None = None
    prefill_workers: int = 0
    """0: aggregated (colocated); otherwise disaggregated with this many prefill and ``decode_workers`` decode."""
    decode_workers: int = 0
    moe_routing: str | None = None
    """None: AIConfigurator's default for the architecture."""
    data_version: str = ""
    assumptions: tuple[tuple[str, str], ...] = ()

    def estimate_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``aiconfigurator.cli.api.cli_estimate`` (model and system are positional)."""
        kwargs: dict[str, Any] = {
            "backend_name": self.backend, "backend_version": self.backend_version, "database_mode": "SILICON",
            "isl": self.isl, "osl": self.osl, "tp_size": self.tp_size, "attention_dp_size": self.attention_dp_size,
            "moe_tp_size": self.moe_tp_size, "moe_ep_size": self.moe_ep_size, "gemm_quant_mode": self.gemm_quant,
            "moe_quant_mode": self.moe_quant, "kvcache_quant_mode": self.kv_quant, "fmha_quant_mode": self.fmha_quant,
            "nextn": self.nextn, "nextn_accepted": self.nextn_accepted, "batch_size": self.batch_size}
        if self.prefill_workers:
            # One prompt per prefill step per worker; decode batches as the colocated server would.
            kwargs |= {"mode": "disagg", "prefill_batch_size": 1, "prefill_num_workers": self.prefill_workers,
                       "decode_batch_size": self.batch_size, "decode_num_workers": self.decode_workers}
        return kwargs


def default_accepted(k: int) -> float:
    """Mean accepted draft tokens per step assumed at draft length ``k`` (sources above ``_FIRST_ACCEPT``)."""
    return round(_FIRST_ACCEPT * sum(_DECAY ** i for i in range(k)), 2)


def pinned_version(server: ServerConfig) -> str:
    """The engine version the matrix pins, read from its interpreter path or image; 'unpinned' when neither says."""
    where = server.runtime_env.image or server.runtime_env.python or ""
    found = re.search(rf"{re.escape(server.runtime)}[-_:@=v]*v?(\d+\.\d+(?:\.\d+)?(?:\.?(?:rc|post|dev)\d+)?)",
                      where.split("@sha256:")[0])
    return found.group(1) if found else "unpinned"


def map_inputs(server: ServerConfig, cell: Cell, spec: PredictSpec) -> AicInputs | str:
    """The AIConfigurator inputs of ``cell`` on ``server``, or why it cannot be predicted."""
    try:
        return _map(server, cell, spec)
    except _Unmappable as exc:
        return str(exc)


def _map(server: ServerConfig, cell: Cell, spec: PredictSpec) -> AicInputs:
    said: dict[str, str] = {}
    hardware = server.hardware
    if not isinstance(hardware, GpuHardware):
        raise _Unmappable("AIConfigurator models GPUs only")
    system = _system(hardware.gpu)
    backend = server.runtime
    if backend not in DATA_VERSIONS:
        raise _Unmappable(f"AIConfigurator {AICONFIGURATOR_VERSION} has no tables for runtime {backend!r} "
                          f"(only {', '.join(DATA_VERSIONS)})")
    version, pinned = DATA_VERSIONS[backend], pinned_version(server)
    if pinned != version:
        said["data version"] = f"tables measured on {backend} {version}; the matrix runs {pinned}"
    weights = server.precision.weights
    if weights == "fp4" and system in _HOPPER:
        raise _Unmappable(f"FP4 (NVFP4) needs Blackwell; {hardware.gpu} ({system}) has no FP4 tensor cores and "
                          "AIConfigurator refuses nvfp4 there")
    model_path = _model_config(server, said)
    entry = _bundled(server)
    gemm, moe = entry.quant.get(f"{weights}/{backend}") or entry.quant.get(weights) or _QUANT[weights]
    kv = _kv_quant(server, said)
    said["quant"] = (f"gemm {gemm}, moe {moe}, kv {kv}, fmha bfloat16 (prefill attention in bf16, what 0.12.0 falls "
                     "back to where it has no fp8 context-attention tables: MLA on SGLang, every model on vLLM)")
    tp, dp, ep = server.parallel.tp, server.parallel.dp, server.parallel.ep
    ranks = tp * dp
    if ranks != hardware.gpus_per_replica:
        raise _Unmappable(f"tp x dp = {ranks} ranks but gpus_per_replica is {hardware.gpus_per_replica}")
    if ranks % ep:
        raise _Unmappable(f"ep={ep} does not divide the {ranks} ranks, so MoE TP (ranks / ep) is not whole")
    said["parallel"] = (f"attention TP {tp} x DP {dp} ({ranks} GPUs); experts over EP {ep} with MoE TP "
                        f"{ranks // ep} (= ranks / ep)")
    prefill, decode, servers = _topology(server, system, said)
    moe_tp, moe_ep = _moe_layout(server, system, ranks, ep, prefill, said)
    if system in _NODE_GPUS and ranks > _NODE_GPUS[system]:
        said["nodes"] = (f"{system} is an {_NODE_GPUS[system]}-GPU node: this {ranks}-GPU server is modelled "
                         "across nodes on their inter-node links; an NVL72 partition is gpu: GB200 (or GB300)")
    lengths = cell.workload.mean_lengths()
    if lengths is None:
        raise _Unmappable(f"workload {cell.workload_name!r} has no mean prompt/output lengths known before prompts "
                          "are made")
    isl, osl = lengths
    batch = _batch(cell.concurrency, servers, dp, said)
    nextn, accepted = _speculation(server, spec, said)
    routing = spec.moe_routing
    if spec.moe_routing is not None and spec.moe_routing not in ROUTINGS:
        raise _Unmappable(f"moe_routing {spec.moe_routing!r}: AIConfigurator {AICONFIGURATOR_VERSION} has MoE tables "
                          f"for {', '.join(ROUTINGS)} only")
    said["moe routing"] = spec.moe_routing or ("AIConfigurator's default for the architecture (power law, alpha "
                                               "1.01 for DeepSeek, 1.2 for Qwen3 MoE)")
    if spec.routing_from is not None:
        measured = measured_routing(spec.routing_from)
        if measured is None:
            raise _Unmappable(f"predict.routing_from: no expert load is stored under {spec.routing_from} (run a "
                              "matrix with telemetry.expert_load: true there first, or drop routing_from)")
        routing, said["moe routing"] = measured.routing, measured.stated()
    return AicInputs(
        model_path=model_path, system=system, backend=backend, backend_version=version, isl=isl, osl=osl,
        tp_size=tp, attention_dp_size=dp, moe_tp_size=moe_tp, moe_ep_size=moe_ep, batch_size=batch,
        gemm_quant=gemm, moe_quant=moe, kv_quant=kv, fmha_quant="bfloat16", nextn=nextn, nextn_accepted=accepted,
        prefill_workers=prefill, decode_workers=decode, moe_routing=routing,
        data_version=f"{backend} {version} tables on {system}; the matrix pins {pinned}",
        assumptions=tuple(said.items()))


def _system(gpu: str) -> str:
    name = re.sub(r"[^A-Z0-9]", "", gpu.upper())
    name = re.sub(r"(SXM\d?|NVL\d*)$", "", name)
    if name not in SYSTEMS:
        raise _Unmappable(f"AIConfigurator {AICONFIGURATOR_VERSION} has no {'/'.join(DATA_VERSIONS)} tables for GPU "
                          f"{gpu!r} (it has {', '.join(SYSTEMS)})")
    return SYSTEMS[name]


def _bundled(server: ServerConfig) -> _Bundled:
    model = server.model
    entry = _MODELS.get(model.id.rsplit("/", 1)[-1].lower()) or _MODELS.get(_FAMILIES.get(model.family or "", ""))
    if entry is None:
        raise _Unmappable(f"no bundled config for {model.id}; AIConfigurator {AICONFIGURATOR_VERSION} is mapped for "
                          f"{', '.join(e.name for e in _MODELS.values())}")
    return entry


def _model_config(server: ServerConfig, said: dict[str, str]) -> str:
    model, weights, entry = server.model, server.precision.weights, _bundled(server)
    if weights not in entry.configs:
        raise _Unmappable(f"no bundled config for {model.id} at {weights}; bundled: {', '.join(entry.configs)}")
    config = entry.configs[weights]
    served = model.checkpoints.get(weights, model.id)
    if served != config:
        said["model config"] = f"{config} stands in for {served} (same architecture, {weights} weights)"
    return config


def _kv_quant(server: ServerConfig, said: dict[str, str]) -> str:
    kv_cache, weights = server.precision.kv_cache, server.precision.weights
    if kv_cache != "auto":
        return "fp8" if kv_cache == "fp8" else "bfloat16"
    kv, why = _bundled(server).kv_auto[weights]
    said["kv cache"] = f"auto taken as {kv}: {why}"
    return kv


def _topology(server: ServerConfig, system: str, said: dict[str, str]) -> tuple[int, int, int]:
    """(prefill workers, decode workers, servers the users are spread over)."""
    topology, per_server = server.topology.root, server.hardware
    assert isinstance(per_server, GpuHardware)
    if isinstance(topology, Replicas):
        said["replicas"] = (f"{topology.replicas} replicas split the users evenly; figures are one replica's "
                            "(the deployment serves that many times the output)")
        return 0, 0, topology.replicas
    if not isinstance(topology, Disaggregated):
        return 0, 0, 1
    total = topology.parts * per_server.gpus_per_replica
    limit = per_server.gpus_per_node or _RACK_GPUS.get(system)
    if limit is not None and total > limit:
        where = "machine" if per_server.gpus_per_node else "rack"
        raise _Unmappable(f"{topology.prefill}P{topology.decode}D of {per_server.gpus_per_replica}-GPU servers needs "
                          f"{total} GPUs, more than the {limit} one {where} holds")
    said["disaggregated"] = (f"{topology.prefill} prefill + {topology.decode} decode workers of this parallelism "
                             f"({total} GPUs), prefill batch 1; figures are the whole deployment's, prefill and "
                             "decode rate-matched; KV transfer is not modelled beyond AIConfigurator's fixed "
                             "correction scales (prefill x1.1, decode x1.08)")
    return topology.prefill, topology.decode, topology.decode


def _moe_layout(server: ServerConfig, system: str, ranks: int, ep: int, prefill: int,
                said: dict[str, str]) -> tuple[int, int]:
    """(MoE TP, MoE EP) to ask for: the matrix's ``(ranks / ep, ep)``, except where disaggregated mode refuses it.

    AIConfigurator 0.12.0's disaggregated estimate resolves each worker's MoE communication
    (``sdk/moe_comm_resolver.py``, ``resolve_model_config_moe_comm``): EP wider than one node of the system is
    priced only as DeepEP all-to-all, which needs pure expert parallelism (MoE TP 1; a ValueError otherwise) and
    WideEP tables (DeepEP dispatch/combine, expert compute and, on SGLang, WideEP MLA) for the phase. Its aggregated
    estimate never makes that check: it prices every layout on the regular MoE path (dispatch collectives over the
    system's links, the fused-MoE tables). A server without a DeepEP ``moe_a2a_backend`` runs that regular path in
    either topology, so its P/D workers are asked for the widest EP inside one node instead (MoE TP making up the
    ranks), which the disaggregated estimate prices on that same path; the substitution is stated.
    """
    moe_tp, moe_ep = ranks // ep, ep
    node = _EP_NODE_GPUS.get(system)
    if not prefill or node is None or moe_ep <= node:
        return moe_tp, moe_ep
    a2a = server.runtime_env.moe_a2a_backend
    if a2a and _DEEPEP.search(a2a) and moe_tp == 1:
        return moe_tp, moe_ep  # DeepEP is what runs: AIConfigurator prices it, or says which tables it lacks
    near = max(d for d in range(1, node + 1) if ranks % d == 0)
    runs = f"sets moe_a2a_backend {a2a}" if a2a else "sets no DeepEP moe_a2a_backend (the regular MoE path)"
    said["moe layout"] = (
        f"P/D workers' MoE modelled as EP {near} x MoE TP {ranks // near}, not the matrix's EP {moe_ep} x MoE TP "
        f"{moe_tp}: AIConfigurator {AICONFIGURATOR_VERSION}'s disaggregated mode takes EP beyond one {system} node "
        f"({node} GPUs) for DeepEP all-to-all, which needs MoE TP 1 and WideEP tables, and this server {runs}; EP "
        f"{near} is the widest inside a node, on the regular MoE path the colocated estimate prices. Every P/D cell "
        f"with EP above {node} gets this layout")
    return ranks // near, near


def _batch(concurrency: int, servers: int, dp: int, said: dict[str, str]) -> int:
    ranks = servers * dp
    exact = concurrency / ranks
    batch = max(1, math.floor(exact + 0.5))
    where = f"{ranks} attention-DP rank{'s' if ranks > 1 else ''}" + (f" of {servers} servers" if servers > 1 else "")
    said["batch"] = (f"c{concurrency} over {where}: {batch} per rank" if batch == exact else
                     f"c{concurrency} over {where} is {exact:g} per rank, rounded to {batch} (c{batch * ranks} "
                     "modelled)")
    return batch


def _speculation(server: ServerConfig, spec: PredictSpec, said: dict[str, str]) -> tuple[int, float | None]:
    method = server.speculation.root
    if method.method == "off":
        return 0, None
    if method.method not in ("mtp", "eagle", "eagle3"):
        raise _Unmappable(f"{method.method} speculation is not modelled: its acceptance depends on repetition in the "
                          "workload (ngram, suffix) or on a separate drafter's cost (draft_model)")
    if getattr(method, "top_k", 1) > 1:
        raise _Unmappable("tree drafting (top_k > 1) is not modelled: AIConfigurator's nextn is a chain")
    k: int = method.k
    stated = spec.accepted(method.method, k)
    if stated is not None:
        accepted, source = stated[0], f"the matrix's {stated[1]}"
    else:
        accepted, source = default_accepted(k), ("default: 0.85 at position 1 (DeepSeek-V3 report), x0.618 per "
                                                 "further position (1.70 at k=3)")
    said["acceptance"] = f"{accepted:g} accepted draft tokens per step at k={k} ({source})"
    if method.method != "mtp":
        said["speculation"] = f"{'EAGLE-3' if method.method == 'eagle3' else 'EAGLE'} modelled as MTP nextn (proxy)"
    return k, accepted
