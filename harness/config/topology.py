"""The topology axis: how one recipe is deployed behind its endpoint.

* ``colocated`` (the default): one server process does prefill and decode, as every cell did before this axis.
* ``{replicas: R}``: R colocated servers behind the engine's own router (``vllm-router``, ``sglang-router``).
* ``{prefill: N, decode: M}``: N prefill and M decode servers joined by the engine's KV transfer, behind the
  engine's router in its prefill/decode mode.

Each part is one server of the cell's parallelism, so a deployment spans (R, or N + M) x ``gpus_per_replica``
GPUs: what its cost and its per-GPU throughput count. The adapters turn a topology into each part's flags and the
router's argv; the servers package owns their processes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator

ROUTING_POLICIES = ("round_robin", "random", "cache_aware", "power_of_two")
"""Routing policies both engines' routers take (vllm-router 0.1.17, sglang-router 0.3.2)."""

RoutingPolicy = Literal["round_robin", "random", "cache_aware", "power_of_two"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Colocated(_Strict):
    kind: Literal["colocated"] = "colocated"

    @property
    def label(self) -> str:
        return "colocated"

    @property
    def parts(self) -> int:
        return 1


class Replicas(_Strict):
    kind: Literal["replicas"] = "replicas"
    replicas: int = Field(ge=2, le=64, description="colocated servers behind the router")
    policy: RoutingPolicy = Field("round_robin", description="the router's policy")

    @property
    def label(self) -> str:
        return f"r{self.replicas}" + ("" if self.policy == "round_robin" else f"-{self.policy}")

    @property
    def parts(self) -> int:
        return self.replicas


class Disaggregated(_Strict):
    kind: Literal["pd"] = "pd"
    prefill: int = Field(ge=1, le=64, description="prefill servers")
    decode: int = Field(ge=1, le=64, description="decode servers")
    connector: str | None = Field(None, description="KV transfer, in the engine's spelling (vLLM kv_connector, "
                                  "e.g. NixlConnector or ExampleConnector; SGLang transfer backend, e.g. mooncake "
                                  "or nixl); default: the adapter's for the hardware")
    policy: RoutingPolicy = Field("round_robin", description="the router's policy for both pools")

    @property
    def label(self) -> str:
        connector = f"-{self.connector}" if self.connector else ""
        return f"{self.prefill}p{self.decode}d{connector}"

    @property
    def parts(self) -> int:
        return self.prefill + self.decode


TopologyKind = Annotated[Colocated | Replicas | Disaggregated, Field(discriminator="kind")]


class Topology(RootModel[TopologyKind]):
    """A topology axis value; ``.root`` is the kind's model."""

    model_config = ConfigDict(frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if value == "colocated":
            return {"kind": "colocated"}
        if isinstance(value, dict) and "kind" not in value:
            if "replicas" in value:
                return {"kind": "replicas", **value}
            if "prefill" in value or "decode" in value:
                return {"kind": "pd", **value}
        return value

    @classmethod
    def colocated(cls) -> Topology:
        return cls.model_validate("colocated")

    @property
    def kind(self) -> str:
        return self.root.kind

    @property
    def label(self) -> str:
        return self.root.label

    @property
    def parts(self) -> int:
        """Servers in the deployment (each one replica of the cell's parallelism)."""
        return self.root.parts

    @property
    def is_colocated(self) -> bool:
        return isinstance(self.root, Colocated)

    def matches(self, selector: Any) -> bool:
        if isinstance(selector, str):
            return selector in (self.kind, self.label)
        if isinstance(selector, dict):
            return all(getattr(self.root, k, None) == v for k, v in selector.items())
        return False
