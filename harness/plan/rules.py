"""Recipe rules: what the model, the hardware and the engine can run, decided at plan time, never by a failed launch.

Each rule looks at one server configuration (and the model's facts: routed experts, MTP layers, MLA, read from
its ``config.json`` where that is local, else from ``models.<name>`` overrides) and returns findings:

- ``error``: the matrix is wrong whatever else it sweeps (EP that does not divide the experts, TP x DP beyond
  the replica's GPUs, FP4 off Blackwell): a ConfigError naming file, key and fix;
- ``skip``: one combination of the cross product cannot run (MTP on a model without MTP layers, a flag an engine
  lacks): with ``unsupported: skip`` the plan drops it and ``harness plan`` shows why; otherwise it is an error
  whose fix names the exclude to add;
- ``note``: something the plan could not check, or that the engine will silently change; shown, never fatal.

Generic rules live in ``RULES``; what one engine cannot do lives in its adapter's ``findings``, which the caller
hands in as an ``EngineLookup`` (planning sits below the engines' registry and never imports it).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from harness.config.hardware import CpuHardware, GpuHardware
from harness.errors import ConfigError
from harness.plan.cells import Plan, ServerConfig, ServerGroup, SkippedGroup
from harness.plan.findings import BLACKWELL, Finding, ModelFacts, model_facts

Rule = Callable[[ServerConfig, ModelFacts], Iterable[Finding]]


def _replica_gpus(server: ServerConfig, facts: ModelFacts) -> Iterable[Finding]:
    hardware, par = server.hardware, server.parallel
    if not isinstance(hardware, GpuHardware):
        return
    key = f"axes.parallel ({server.parallel.label})"
    if par.world_size > hardware.gpus_per_replica:
        yield Finding.error("replica-gpus", key, f"tp x dp = {par.world_size} ranks, but a replica has "
                            f"{hardware.gpus_per_replica} GPUs", "use tp x dp <= hardware.gpus_per_replica, or "
                            "raise gpus_per_replica")
    elif par.world_size < hardware.gpus_per_replica:
        yield Finding.note("replica-gpus", key, f"uses {par.world_size} of the replica's "
                           f"{hardware.gpus_per_replica} GPUs; cost is counted for all of them", "")


def _expert_parallel(server: ServerConfig, facts: ModelFacts) -> Iterable[Finding]:
    par = server.parallel
    if par.ep == 1:
        return
    key = f"axes.parallel ({par.label})"
    if par.world_size % par.ep:
        yield Finding.error("ep-ranks", key, f"ep={par.ep} does not divide the {par.world_size} ranks of tp x dp "
                            "(each expert shard spans world / ep ranks)", f"use an ep that divides {par.world_size}")
    if facts.routed_experts is None:
        yield Finding.note("ep-experts", key, f"EP {par.ep} not checked against the routed experts: "
                           f"{facts.source}", f"set models.{server.model_name}.routed_experts")
    elif facts.routed_experts % par.ep:
        fits = [n for n in range(1, par.world_size + 1) if facts.routed_experts % n == 0 and par.world_size % n == 0]
        yield Finding.error("ep-experts", key, f"ep={par.ep} does not divide the {facts.routed_experts} routed "
                            f"experts of models.{server.model_name}", f"use ep in {fits}")


def _mtp_layers(server: ServerConfig, facts: ModelFacts) -> Iterable[Finding]:
    if server.speculation.method != "mtp":
        return
    key = f"models.{server.model_name}"
    if facts.nextn_layers is None:
        yield Finding.note("mtp-layers", key, f"MTP not checked against the model's MTP layers: {facts.source}",
                           f"set models.{server.model_name}.num_nextn_predict_layers")
    elif facts.nextn_layers == 0:
        yield Finding.skip("mtp-layers", key, f"{server.model_name} has no MTP layer (num_nextn_predict_layers = "
                           "0), so MTP speculation cannot run on it",
                           f"exclude {{model: {server.model_name}, speculation: mtp}}, or draft with eagle3/ngram")


def _fp4_blackwell(server: ServerConfig, facts: ModelFacts) -> Iterable[Finding]:
    if server.precision.weights != "fp4":
        return
    hardware = server.hardware
    name = hardware.gpu if isinstance(hardware, GpuHardware) else "the CPU"
    if isinstance(hardware, CpuHardware) or hardware.gpu.upper() not in BLACKWELL:
        yield Finding.error("fp4-blackwell", f"axes.precision ({server.precision.label})",
                            f"NVFP4 weights need a Blackwell-class GPU ({', '.join(sorted(BLACKWELL))}); "
                            f"{name} has no FP4 tensor cores", "drop fp4 from axes.precision (fp8 or mxfp4 run "
                            "on Hopper), or set hardware.gpu to a Blackwell GPU")


class EngineRules(Protocol):
    """What the rules need of a runtime adapter (``harness.servers.runtime.Runtime`` is one)."""

    shares_harness_env: bool
    router_module: str | None

    def findings(self, server: ServerConfig, facts: ModelFacts) -> list[Finding]: ...


EngineLookup = Callable[[str], EngineRules]
"""Runtime name -> its adapter: given by the caller, so that planning never imports the engines' registry."""


def _runtime_environment(server: ServerConfig, engine: EngineRules) -> Iterable[Finding]:
    env = server.runtime_env
    if not engine.shares_harness_env and env.python is None and env.image is None:
        yield Finding.error("runtime-env", f"runtimes.{server.runtime}",
                            f"{server.runtime} never runs in the harness's environment (engines pin conflicting "
                            "dependencies) and no environment is named",
                            f"set runtimes.{server.runtime}.python to an interpreter that has it, or "
                            f"runtimes.{server.runtime}.image to an image pinned by digest")
    elif env.python is not None and not Path(env.python).exists():
        yield Finding.note("runtime-env", f"runtimes.{server.runtime}.python",
                           f"{env.python} does not exist on this machine (fine if the run happens elsewhere)", "")


def _router(server: ServerConfig, engine: EngineRules) -> Iterable[Finding]:
    """A deployment needs the engine's own router, importable from the harness's environment."""
    if server.topology.is_colocated:
        return
    key = f"axes.topology ({server.topology.label})"
    if engine.router_module is None:
        yield Finding.error("router", key, f"{server.runtime} has no router in this harness",
                            "use topology: colocated for this runtime")
    elif importlib.util.find_spec(engine.router_module.split(".")[0]) is None:
        package = engine.router_module.split(".")[0].replace("_", "-")
        yield Finding.error("router", key, f"{server.runtime}'s router ({package}) is not installed in the "
                            "harness's environment", f"pip install {package} into .venv (make setup installs "
                            "vllm-router; sglang-router is pinned in the Makefile's ROUTERS)")


def _topology_fits(server: ServerConfig, facts: ModelFacts) -> Iterable[Finding]:
    """Every server of a deployment runs on one machine (or one Slurm node): their GPUs must fit it."""
    parts, hardware = server.topology.parts, server.hardware
    if parts == 1:
        return
    key = f"axes.topology ({server.topology.label})"
    if isinstance(hardware, GpuHardware):
        need = parts * hardware.gpus_per_replica
        if hardware.gpus_per_node is None:
            yield Finding.note("topology-gpus", key, f"the deployment needs {need} GPUs on one machine; not "
                               "checked", "set hardware.gpus_per_node")
        elif need > hardware.gpus_per_node:
            yield Finding.error("topology-gpus", key, f"{parts} servers x {hardware.gpus_per_replica} GPUs = {need} "
                                f"GPUs, more than one machine's {hardware.gpus_per_node} (a deployment runs on one "
                                "machine)", "use fewer prefill/decode servers or replicas, or a smaller "
                                "hardware.gpus_per_replica")
    else:
        yield Finding.note("topology-cpu", key, f"{parts} engines share this machine's cores; each part's figures "
                           "include that contention", "")


RULES: dict[str, Rule] = {
    "replica-gpus": _replica_gpus, "expert-parallel": _expert_parallel, "mtp-layers": _mtp_layers,
    "fp4-blackwell": _fp4_blackwell, "topology-fits": _topology_fits,
}


def findings(server: ServerConfig, engine: EngineRules) -> list[Finding]:
    """Every rule's findings on one server: the generic rules, its environment, then the engine's own. A deployment
    has none: it runs already, and its recipe is the declared one, not launched from these rules' flags."""
    if server.is_deployment:
        return []
    facts = model_facts(server)
    found = [f for rule in RULES.values() for f in rule(server, facts)]
    return [*found, *_runtime_environment(server, engine), *_router(server, engine),
            *engine.findings(server, facts)]


def raise_first(server: ServerConfig, source: str, engine: EngineRules) -> None:
    """Raise the first error, else the first skip, as a ConfigError (for plans nobody vetted)."""
    found = findings(server, engine)
    for outcome in ("error", "skip"):
        first = next((f for f in found if f.outcome == outcome), None)
        if first is not None:
            raise first.as_error(source)


def vet(plan: Plan, source: str, engines: EngineLookup) -> Plan:
    """The plan without the servers a rule skips (kept in ``plan.skipped`` with their reasons); errors raise."""
    kept: list[ServerGroup] = []
    skipped = list(plan.skipped)
    for group in plan.groups:
        found = findings(group.server, engines(group.server.runtime))
        if error := next((f for f in found if f.outcome == "error"), None):
            raise error.as_error(source)
        skips = tuple(dict.fromkeys(f.problem for f in found if f.outcome == "skip"))
        if skips:
            skipped.append(SkippedGroup(server=group.server, cells=group.cells, reasons=skips))
        else:
            kept.append(group)
    if not kept:
        reasons = dict.fromkeys(r for s in skipped for r in s.reasons)
        raise ConfigError(source, "axes", "every server of the matrix is skipped: " + "; ".join(reasons),
                          "loosen the axes or the hardware")
    return replace(plan, groups=tuple(kept), skipped=tuple(skipped))


def notes(plan: Plan, engines: EngineLookup) -> list[tuple[str, Finding]]:
    """(server label, note) for every note on the plan's servers, each distinct note once."""
    seen: dict[tuple[str, str], tuple[str, Finding]] = {}
    for group in plan.groups:
        for finding in findings(group.server, engines(group.server.runtime)):
            if finding.outcome == "note":
                seen.setdefault((finding.key, finding.problem), (group.server.label, finding))
    return list(seen.values())
