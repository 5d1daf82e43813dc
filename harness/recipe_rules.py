"""Recipe rules: what the model, the hardware and the engine can run, decided at plan time, never by a failed launch.

Each rule looks at one server configuration (and the model's facts: routed experts, MTP layers, MLA, read from
its ``config.json`` where that is local, else from ``models.<name>`` overrides) and returns findings:

- ``error``: the matrix is wrong whatever else it sweeps (EP that does not divide the experts, TP x DP beyond
  the replica's GPUs, FP4 off Blackwell): a ConfigError naming file, key and fix;
- ``skip``: one combination of the cross product cannot run (MTP on a model without MTP layers, a flag an engine
  lacks): with ``unsupported: skip`` the plan drops it and ``harness plan`` shows why; otherwise it is an error
  whose fix names the exclude to add;
- ``note``: something the plan could not check, or that the engine will silently change; shown, never fatal.

Generic rules live in ``RULES``; what one engine cannot do lives in its adapter's ``findings``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Literal

from harness.config import CpuHardware, GpuHardware
from harness.errors import ConfigError
from harness.fixtures import FIXTURE_PREFIX, fixture_path
from harness.plan import Plan, ServerConfig, ServerGroup, SkippedGroup

Outcome = Literal["error", "skip", "note"]
BLACKWELL = frozenset({"B200", "B300", "GB200", "GB300"})
"""GPUs with NVFP4 tensor cores."""
_EXPERT_KEYS = ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")


@dataclass(frozen=True, slots=True)
class Finding:
    outcome: Outcome
    rule: str
    key: str
    problem: str
    fix: str

    @classmethod
    def error(cls, rule: str, key: str, problem: str, fix: str) -> Finding:
        return cls("error", rule, key, problem, fix)

    @classmethod
    def skip(cls, rule: str, key: str, problem: str, fix: str) -> Finding:
        return cls("skip", rule, key, problem, fix)

    @classmethod
    def note(cls, rule: str, key: str, problem: str, fix: str) -> Finding:
        return cls("note", rule, key, problem, fix)

    def as_error(self, source: str) -> ConfigError:
        fix = self.fix
        if self.outcome == "skip":
            fix += "; or set `unsupported: skip` to let `harness plan` drop such cells and list them"
        return ConfigError(source, self.key, self.problem, fix)


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What the rules need to know about a model; None where it could not be learned (said in ``source``)."""

    routed_experts: int | None
    nextn_layers: int | None
    mla: bool | None
    source: str


@cache
def _read_config(path: str) -> dict[str, object] | None:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _config_path(model_id: str) -> Path | None:
    """The local config.json of a model id: a fixture's build directory or a local checkpoint directory."""
    if model_id.startswith(FIXTURE_PREFIX):
        try:
            return fixture_path(model_id.removeprefix(FIXTURE_PREFIX)) / "config.json"
        except KeyError:
            return None
    return Path(model_id) / "config.json" if Path(model_id).is_dir() else None


def model_facts(server: ServerConfig) -> ModelFacts:
    """Facts from the model's local config.json, overridden by ``models.<name>.routed_experts`` and
    ``num_nextn_predict_layers``."""
    spec = server.model
    path = _config_path(spec.id)
    config = _read_config(str(path)) if path is not None else None
    experts = nextn = mla = None
    if config is not None:
        experts = next((int(v) for k in _EXPERT_KEYS if isinstance(v := config.get(k), int)), None)
        nextn = int(config.get("num_nextn_predict_layers") or 0)  # type: ignore[call-overload]
        mla = config.get("kv_lora_rank") is not None
        source = f"{path}"
    elif path is not None:
        source = f"{path} is not there yet (`harness fixtures` builds fixtures)"
    else:
        source = f"{spec.id} is not local"
    experts = spec.routed_experts if spec.routed_experts is not None else experts
    nextn = spec.num_nextn_predict_layers if spec.num_nextn_predict_layers is not None else nextn
    return ModelFacts(routed_experts=experts, nextn_layers=nextn, mla=mla, source=source)


@cache
def cpu_has_amx() -> bool:
    try:
        return "amx_tile" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


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


def _runtime_environment(server: ServerConfig, facts: ModelFacts) -> Iterable[Finding]:
    from harness.servers import get_runtime

    env = server.runtime_env
    if not get_runtime(server.runtime).shares_harness_env and env.python is None and env.image is None:
        yield Finding.error("runtime-env", f"runtimes.{server.runtime}",
                            f"{server.runtime} never runs in the harness's environment (engines pin conflicting "
                            "dependencies) and no environment is named",
                            f"set runtimes.{server.runtime}.python to an interpreter that has it, or "
                            f"runtimes.{server.runtime}.image to an image pinned by digest")
    elif env.python is not None and not Path(env.python).exists():
        yield Finding.note("runtime-env", f"runtimes.{server.runtime}.python",
                           f"{env.python} does not exist on this machine (fine if the run happens elsewhere)", "")


RULES: dict[str, Rule] = {
    "replica-gpus": _replica_gpus, "expert-parallel": _expert_parallel, "mtp-layers": _mtp_layers,
    "fp4-blackwell": _fp4_blackwell, "runtime-env": _runtime_environment,
}


def findings(server: ServerConfig) -> list[Finding]:
    """Every rule's findings on one server: the generic rules, then the server's runtime adapter."""
    from harness.servers import get_runtime

    facts = model_facts(server)
    found = [f for rule in RULES.values() for f in rule(server, facts)]
    return found + get_runtime(server.runtime).findings(server, facts)


def raise_first(server: ServerConfig, source: str) -> None:
    """Raise the first error, else the first skip, as a ConfigError (for plans nobody vetted)."""
    found = findings(server)
    for outcome in ("error", "skip"):
        first = next((f for f in found if f.outcome == outcome), None)
        if first is not None:
            raise first.as_error(source)


def vet(plan: Plan, source: str) -> Plan:
    """The plan without the servers a rule skips (kept in ``plan.skipped`` with their reasons); errors raise."""
    kept: list[ServerGroup] = []
    skipped = list(plan.skipped)
    for group in plan.groups:
        found = findings(group.server)
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


def notes(plan: Plan) -> list[tuple[str, Finding]]:
    """(server label, note) for every note on the plan's servers, each distinct note once."""
    seen: dict[tuple[str, str], tuple[str, Finding]] = {}
    for group in plan.groups:
        for finding in findings(group.server):
            if finding.outcome == "note":
                seen.setdefault((finding.key, finding.problem), (group.server.label, finding))
    return list(seen.values())
