"""What AIConfigurator is asked for one cell: the pure translation of a harness cell into its single-point inputs.

This module owns the mapping only (model id to a bundled config, GPU to a system, precision to quant modes,
``{tp, dp, ep}`` to attention TP/DP and MoE TP/EP, concurrency to a per-rank batch, speculation to ``nextn``,
topology to aggregated or disaggregated mode) and every assumption the mapping makes. It never imports
aiconfigurator, so it is tested without it; calling the library is ``harness.predict.aiconfigurator``'s business.
A cell that cannot be mapped gets a reason string, which the predictor turns into a ``NoPrediction``. What the
library holds tables for (versions, systems, bundled configs, quant modes, routings) is
``harness.predict.aiconfigurator_tables``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from harness.config.hardware import GpuHardware
from harness.config.predict import PredictSpec
from harness.config.topology import Disaggregated, Replicas
from harness.plan.cells import Cell, ServerConfig
from harness.predict.aiconfigurator_tables import (
    AICONFIGURATOR_VERSION,
    DATA_VERSIONS,
    DEEPEP,
    EP_NODE_GPUS,
    HOPPER,
    NODE_GPUS,
    QUANT,
    RACK_GPUS,
    ROUTINGS,
    Unmappable,
    bundled_for,
    system_for,
)
from harness.predict.routing_fit import measured_routing

# Accepted-token defaults when the matrix's predict.accepted_tokens says nothing for k. Position 1 accepts 0.85
# (DeepSeek-V3 technical report, sec. 5.4.3: the second token is accepted 85-90% of the time); each further drafted
# position keeps 0.618 of the one before, which gives 1.70 at k=3: the assumption docs/studies/prediction.md
# uses against InferenceX's DeepSeek-R1 MTP points. So k=1 -> 0.85, k=2 -> 1.38, k=3 -> 1.70, k=4 -> 1.90.
_FIRST_ACCEPT, _DECAY = 0.85, 0.618


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
    except Unmappable as exc:
        return str(exc)


def _map(server: ServerConfig, cell: Cell, spec: PredictSpec) -> AicInputs:
    said: dict[str, str] = {}
    hardware = server.hardware
    if not isinstance(hardware, GpuHardware):
        raise Unmappable("AIConfigurator models GPUs only")
    system = system_for(hardware.gpu)
    backend = server.runtime
    if backend not in DATA_VERSIONS:
        raise Unmappable(f"AIConfigurator {AICONFIGURATOR_VERSION} has no tables for runtime {backend!r} "
                         f"(only {', '.join(DATA_VERSIONS)})")
    version, pinned = DATA_VERSIONS[backend], pinned_version(server)
    if pinned != version:
        said["data version"] = f"tables measured on {backend} {version}; the matrix runs {pinned}"
    weights = server.precision.weights
    if weights == "fp4" and system in HOPPER:
        raise Unmappable(f"FP4 (NVFP4) needs Blackwell; {hardware.gpu} ({system}) has no FP4 tensor cores and "
                         "AIConfigurator refuses nvfp4 there")
    model_path = _model_config(server, said)
    entry = bundled_for(server.model)
    gemm, moe = entry.quant.get(f"{weights}/{backend}") or entry.quant.get(weights) or QUANT[weights]
    kv = _kv_quant(server, said)
    said["quant"] = (f"gemm {gemm}, moe {moe}, kv {kv}, fmha bfloat16 (prefill attention in bf16, what 0.12.0 falls "
                     "back to where it has no fp8 context-attention tables: MLA on SGLang, every model on vLLM)")
    tp, dp, ep = server.parallel.tp, server.parallel.dp, server.parallel.ep
    ranks = tp * dp
    if ranks != hardware.gpus_per_replica:
        raise Unmappable(f"tp x dp = {ranks} ranks but gpus_per_replica is {hardware.gpus_per_replica}")
    if ranks % ep:
        raise Unmappable(f"ep={ep} does not divide the {ranks} ranks, so MoE TP (ranks / ep) is not whole")
    said["parallel"] = (f"attention TP {tp} x DP {dp} ({ranks} GPUs); experts over EP {ep} with MoE TP "
                        f"{ranks // ep} (= ranks / ep)")
    prefill, decode, servers = _topology(server, system, said)
    moe_tp, moe_ep = _moe_layout(server, system, ranks, ep, prefill, said)
    if system in NODE_GPUS and ranks > NODE_GPUS[system]:
        said["nodes"] = (f"{system} is an {NODE_GPUS[system]}-GPU node: this {ranks}-GPU server is modelled "
                         "across nodes on their inter-node links; an NVL72 partition is gpu: GB200 (or GB300)")
    lengths = cell.workload.mean_lengths()
    if lengths is None:
        raise Unmappable(f"workload {cell.workload_name!r} has no mean prompt/output lengths known before prompts "
                         "are made")
    isl, osl = lengths
    batch = _batch(cell.concurrency, servers, dp, said)
    nextn, accepted = _speculation(server, spec, said)
    routing = spec.moe_routing
    if spec.moe_routing is not None and spec.moe_routing not in ROUTINGS:
        raise Unmappable(f"moe_routing {spec.moe_routing!r}: AIConfigurator {AICONFIGURATOR_VERSION} has MoE tables "
                         f"for {', '.join(ROUTINGS)} only")
    said["moe routing"] = spec.moe_routing or ("AIConfigurator's default for the architecture (power law, alpha "
                                               "1.01 for DeepSeek, 1.2 for Qwen3 MoE)")
    if spec.routing_from is not None:
        measured = measured_routing(spec.routing_from)
        if measured is None:
            raise Unmappable(f"predict.routing_from: no expert load is stored under {spec.routing_from} (run a "
                             "matrix with telemetry.expert_load: true there first, or drop routing_from)")
        routing, said["moe routing"] = measured.routing, measured.stated()
    return AicInputs(
        model_path=model_path, system=system, backend=backend, backend_version=version, isl=isl, osl=osl,
        tp_size=tp, attention_dp_size=dp, moe_tp_size=moe_tp, moe_ep_size=moe_ep, batch_size=batch,
        gemm_quant=gemm, moe_quant=moe, kv_quant=kv, fmha_quant="bfloat16", nextn=nextn, nextn_accepted=accepted,
        prefill_workers=prefill, decode_workers=decode, moe_routing=routing,
        data_version=f"{backend} {version} tables on {system}; the matrix pins {pinned}",
        assumptions=tuple(said.items()))


def _model_config(server: ServerConfig, said: dict[str, str]) -> str:
    model, weights, entry = server.model, server.precision.weights, bundled_for(server.model)
    if weights not in entry.configs:
        raise Unmappable(f"no bundled config for {model.id} at {weights}; bundled: {', '.join(entry.configs)}")
    config = entry.configs[weights]
    served = model.checkpoints.get(weights, model.id)
    if served != config:
        said["model config"] = f"{config} stands in for {served} (same architecture, {weights} weights)"
    return config


def _kv_quant(server: ServerConfig, said: dict[str, str]) -> str:
    kv_cache, weights = server.precision.kv_cache, server.precision.weights
    if kv_cache != "auto":
        return "fp8" if kv_cache == "fp8" else "bfloat16"
    kv, why = bundled_for(server.model).kv_auto[weights]
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
    limit = per_server.gpus_per_node or RACK_GPUS.get(system)
    if limit is not None and total > limit:
        where = "machine" if per_server.gpus_per_node else "rack"
        raise Unmappable(f"{topology.prefill}P{topology.decode}D of {per_server.gpus_per_replica}-GPU servers needs "
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
    node = EP_NODE_GPUS.get(system)
    if not prefill or node is None or moe_ep <= node:
        return moe_tp, moe_ep
    a2a = server.runtime_env.moe_a2a_backend
    if a2a and DEEPEP.search(a2a) and moe_tp == 1:
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
        raise Unmappable(f"{method.method} speculation is not modelled: its acceptance depends on repetition in the "
                         "workload (ngram, suffix) or on a separate drafter's cost (draft_model)")
    if getattr(method, "top_k", 1) > 1:
        raise Unmappable("tree drafting (top_k > 1) is not modelled: AIConfigurator's nextn is a chain")
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
