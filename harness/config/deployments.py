"""Deployments (``deployments:``): servers the harness did not launch and measures as they are, beside or instead of
the configurations it launches.

A deployment is reached at a base URL (Kubernetes behind llm-d's gateway or a port-forward, a Slurm job a colleague
started, a managed endpoint, a ``vllm serve`` typed by hand). What it runs (precision, parallelism, speculation,
topology) is *declared* by the user, never varied: its cells vary only what the client controls (workload,
concurrency, request rate, SLO search, repeats, parity). What the server says about itself is read before the first
cell and checked against the declaration (``harness.servers.self_description``).

Secrets never live here: the API key is named by the environment variable that holds it (``api_key_env``), so a
matrix, a lock or a report can be shared as they are. The polite-load limits default small, because the server is
somebody else's.
"""

from __future__ import annotations

import re
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from harness.config.parallel import Parallel
from harness.config.precision import Precision
from harness.config.speculation import Speculation
from harness.config.strict_model import StrictModel
from harness.config.topology import Topology

RECIPE_AXES = ("precision", "parallel", "speculation", "topology")
"""What a deployment runs: declared by the user (``declared:``), never an axis it is measured across."""


class DeclaredRecipe(StrictModel):
    """What the user says the deployment runs. Each value is recorded as declared; where the server reveals it,
    it is checked, and a contradiction is a warning in the plan and a line in the report."""

    precision: Precision | None = Field(None, description="weights and KV-cache dtype the server runs")
    parallel: Parallel | None = Field(None, description="{tp, dp, ep} of one replica")
    speculation: Speculation | None = Field(None, description="the speculative decoding it serves with")
    topology: Topology | None = Field(None, description="colocated, {replicas: R} behind a router, or "
                                      "{prefill: N, decode: M}: the servers priced, each at the matrix's "
                                      "hardware (hardware.gpus_per_replica of hardware.gpu at cost:'s price)")

    def labels(self) -> dict[str, str]:
        """The values the user gave, as the tables write them (``fp8``, ``tp8-ep8``, ``ngram3``)."""
        return {name: getattr(self, name).label for name in RECIPE_AXES if getattr(self, name) is not None}

    def declared(self) -> dict[str, Any]:
        """The values the user gave, as JSON (what the lock, the report and the export say was declared)."""
        return {name: getattr(self, name).model_dump(mode="json") for name in RECIPE_AXES
                if getattr(self, name) is not None}


class TlsSpec(StrictModel):
    """How an ``https://`` deployment's certificate is checked: verified against the system's trust store by
    default, or against a named CA bundle; turning verification off is explicit and printed in the report."""

    verify: bool = Field(True, description="verify the server's certificate; false is printed in the report")
    ca_bundle: str | None = Field(None, description="PEM file of the CA(s) that signed the server's certificate "
                                  "(a private CA); default: the system's trust store")

    @model_validator(mode="after")
    def _coherent(self) -> TlsSpec:
        if self.ca_bundle is not None and not self.verify:
            raise ValueError("ca_bundle is set but verify is false: a CA bundle is only read to verify; drop one")
        return self


class DeploymentLimits(StrictModel):
    """How much load the harness may put on a server that is not its own."""

    max_concurrency: int = Field(16, ge=1, le=4096, description="no cell of this deployment runs more requests "
                                 "in flight than this (a concurrency axis or search above it is refused)")
    max_requests: int = Field(5000, ge=1, le=10_000_000, description="inference requests the harness may send "
                              "to it in one run, warm-ups and parity included; past it the rest are not sent and "
                              "are recorded so")


class DeploymentExpertLoad(StrictModel):
    """Expert load where the deployment allows it: SGLang started with ``--expert-distribution-recorder-mode``
    and its dump directory readable here, or vLLM started with the project's worker extension in dev mode."""

    enabled: bool = Field(True, description="the deployment was started with the engine's collector")
    dump_dir: str | None = Field(None, description="SGLang: SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR as this "
                                 "machine sees it (a shared filesystem or volume); the recorder writes its dumps "
                                 "on the server's disk")


class Deployment(StrictModel):
    """One server (or one endpoint in front of several) that the harness measures without launching it."""

    base_url: str = Field(description="the server's root, http(s)://host[:port][/prefix] (the client appends "
                          "/v1/...)")
    model: str = Field(description="the models: entry it serves (its tokenizer, family and max_model_len)")
    served_model: str = Field(min_length=1, description="the model id requests name (GET /v1/models lists it)")
    runtime: str = Field("openai", description="the engine behind it: vllm, sglang, or openai for a server "
                         "whose engine is unknown (no engine metrics, counters or self-description read)")
    metrics: str = Field("self", description="where its Prometheus metrics are: self (its own /metrics), none, "
                         "or a URL whose /metrics is read (a pod's port, say)")
    metrics_auth: bool = Field(False, description="send the API key to a metrics URL on another host too "
                               "(the key goes to the base URL's host only, unless this is set)")
    api_key_env: str | None = Field(None, description="the environment variable holding the API key (sent as "
                                    "Authorization: Bearer); the key itself is never written in a matrix")
    tls: TlsSpec = Field(default_factory=TlsSpec)
    declared: DeclaredRecipe = Field(default_factory=DeclaredRecipe)
    limits: DeploymentLimits = Field(default_factory=DeploymentLimits)
    expert_load: DeploymentExpertLoad | None = Field(None, description="the deployment's expert-load "
                                                     "collector, where it was started with one")
    parity_reference: str | None = Field(None, description="another deployment's name to judge this one's "
                                         "tool-call parity against; default: the launched server of the same "
                                         "model at the reference precision")
    profile: bool = Field(False, description="the harness may call the server's /start_profile and "
                          "/stop_profile (profile.cells selecting its cells); off: it sends none")

    @model_validator(mode="before")
    @classmethod
    def _recipe_is_declared(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for axis in (*RECIPE_AXES, "concurrency", "workload"):
                if axis in data:
                    where = f"declared.{axis}" if axis in RECIPE_AXES else f"axes.{axis}"
                    raise ValueError(f"{axis}: a deployment's {axis} is not set here: "
                                     + (f"what it runs is declared under {where} (one value) and checked against "
                                        "what the server says; to compare several, deploy each and name both"
                                        if axis in RECIPE_AXES else f"the client varies it across every "
                                        f"deployment with {where}"))
        return data

    @field_validator("api_key_env")
    @classmethod
    def _variable(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", value):
            raise ValueError(f"{value!r} is not an environment variable's name: name the variable that holds the "
                             "key (letters, digits and '_', not starting with a digit), e.g. PROD_LLM_KEY; the key "
                             "itself never goes in the matrix")
        return value

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value!r} is not an http:// or https:// URL with a host")
        if parts.username or parts.password:
            raise ValueError("credentials in the URL would be written to the lock and the report; name the "
                             "variable that holds the key in api_key_env instead")
        if parts.query or parts.fragment:
            raise ValueError(f"{value!r}: a base URL takes no query or fragment")
        path = parts.path.rstrip("/")
        if path.endswith("/v1"):
            raise ValueError(f"{value!r} ends in /v1: give the server's root (the client appends /v1/...)")
        return value.rstrip("/")

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, value: str) -> str:
        if value in ("self", "none"):
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value!r}: write self, none, or an http(s):// URL whose /metrics is read")
        return value.rstrip("/").removesuffix("/metrics")

    @property
    def scheme(self) -> Literal["http", "https"]:
        return "https" if self.base_url.startswith("https://") else "http"

    def metrics_urls(self) -> tuple[str, ...]:
        """The roots whose ``/metrics`` are read around each cell."""
        return () if self.metrics == "none" else (self.base_url if self.metrics == "self" else self.metrics,)

    def declared_axes(self) -> tuple[str, ...]:
        return tuple(name for name in RECIPE_AXES if getattr(self.declared, name) is not None)
