"""What the recipe rules say about a server (``Finding``) and what they know of its model (``ModelFacts``).

Findings are the vocabulary shared by the generic rules (``harness.plan.rules``) and each engine's adapter, which
adds what its engine cannot run. Model facts come from the model's local ``config.json`` where it is local (a
built fixture, a checkpoint directory), overridden by ``models.<name>`` settings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from harness.errors import ConfigError
from harness.fixtures import FIXTURE_PREFIX, fixture_path
from harness.plan.cells import ServerConfig

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
        layers = config.get("num_nextn_predict_layers")
        nextn = layers if isinstance(layers, int) else 0
        mla = config.get("kv_lora_rank") is not None
        source = f"{path}"
    elif path is not None:
        source = f"{path} is not there yet (`harness fixtures` builds fixtures)"
    else:
        source = f"{spec.id} is not local"
    experts = spec.routed_experts if spec.routed_experts is not None else experts
    nextn = spec.num_nextn_predict_layers if spec.num_nextn_predict_layers is not None else nextn
    return ModelFacts(routed_experts=experts, nextn_layers=nextn, mla=mla, source=source)
