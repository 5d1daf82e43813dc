"""Before the first cell of a deployment: what its server says about itself, checked against what its owner declared.

``GET /v1/models`` answers for every OpenAI-compatible server (the model ids it serves, and ``max_model_len`` on vLLM
and SGLang); the engine's adapter reads the rest (``Runtime.revealer``). Each declared value is then ``agrees``,
``contradicts`` (a warning in the plan, a line in the report) or ``not verified`` (the server does not reveal it),
and a value the server reveals that nobody declared is shown as ``revealed``. The result is stored with the run and in
the lock beside the declaration, scrubbed of secrets (``harness.servers.revealed.scrubbed``).

A 401 or 403 here stops the run before any measurement (``DeploymentRefused``), naming the deployment and the
environment variable that should hold its key; an unreachable server is recorded (its cells then fail as data).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.endpoint_access import http_client
from harness.errors import DeploymentRefused, ServerLost
from harness.plan.cells import ServerConfig
from harness.servers.prometheus import MetricsSnapshot, scrape
from harness.servers.revealed import FACTS, Revealed, kv_cache_from
from harness.servers.runtime_lookup import get_runtime

CheckStatus = Literal["agrees", "contradicts", "not verified", "revealed"]


class Check(BaseModel):
    """One fact: what was declared, what the server said, and whether they agree."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fact: str
    declared: str | None
    observed: str | None
    status: CheckStatus


class SelfDescription(BaseModel):
    """A deployment's declaration beside what its server said about itself (no secrets)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deployment: str
    base_url: str
    runtime: str
    reachable: bool
    problem: str | None = None
    """Why the server could not be read (unreachable, not JSON); None when it answered."""
    model_ids: tuple[str, ...] = ()
    max_model_len: int | None = None
    declared: dict[str, Any] = Field(default_factory=dict)
    revealed: Revealed = Field(default_factory=Revealed)
    checks: tuple[Check, ...] = ()
    tls_verify: bool | str = True

    @property
    def contradictions(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == "contradicts")

    def warnings(self) -> list[str]:
        """One line per contradiction, as the plan and the report print them."""
        return [f"deployment {self.deployment}: declared {c.fact} {c.declared}, the server says {c.observed}"
                for c in self.contradictions]


def declared_facts(server: ServerConfig) -> dict[str, str]:
    """The deployment's declaration in the vocabulary the servers' answers are read into (``revealed.FACTS``)."""
    assert server.deployment is not None
    declared = server.deployment.declared
    facts: dict[str, str] = {}
    if declared.precision is not None:
        facts["weights"], facts["kv_cache"] = declared.precision.weights, kv_cache_from(declared.precision.kv_cache)
    if declared.parallel is not None:
        facts.update(tp=str(declared.parallel.tp), dp=str(declared.parallel.dp), ep=str(declared.parallel.ep))
    if declared.speculation is not None:
        facts["speculation"] = declared.speculation.method
    if server.deployment.expert_load is not None:
        facts["expert_load"] = "on" if server.deployment.expert_load.enabled else "off"
    return facts


def _same(fact: str, declared: str, observed: str) -> bool:
    if fact == "kv_cache" and {declared, observed} <= {"auto", "bf16"}:
        return True  # auto is the model's dtype: bf16 for every checkpoint this harness declares so
    return declared == observed


def compare(server: ServerConfig, revealed: Revealed, model_ids: tuple[str, ...],
            max_model_len: int | None) -> tuple[Check, ...]:
    """Every declared fact against the server's word, then what the server revealed that nobody declared."""
    assert server.deployment is not None
    declared = declared_facts(server)
    checks = []
    served = server.deployment.served_model
    checks.append(Check(fact="served_model", declared=served, observed=", ".join(model_ids) or None,
                        status="not verified" if not model_ids else "agrees" if served in model_ids
                        else "contradicts"))
    wanted = server.model.max_model_len
    checks.append(Check(fact="max_model_len", declared=str(wanted), observed=None if max_model_len is None
                        else str(max_model_len), status="not verified" if max_model_len is None
                        else "agrees" if max_model_len >= wanted else "contradicts"))
    for fact in FACTS:
        mine, theirs = declared.get(fact), revealed.facts.get(fact)
        if mine is None and theirs is None:
            continue
        status: CheckStatus = "revealed" if mine is None else "not verified" if theirs is None \
            else "agrees" if _same(fact, mine, theirs) else "contradicts"
        checks.append(Check(fact=fact, declared=mine, observed=theirs, status=status))
    return tuple(checks)


async def _models(client: httpx.AsyncClient, server: ServerConfig) -> tuple[tuple[str, ...], int | None]:
    """The ids ``GET /v1/models`` lists and the served model's ``max_model_len``; refusals raise."""
    assert server.deployment is not None
    deployment = server.deployment
    response = await client.get(f"{deployment.base_url}/v1/models")
    if response.status_code in (401, 403):
        variable = deployment.api_key_env
        fix = (f"check that ${variable} holds the key this deployment accepts" if variable else
               f"the server wants a key: set deployments.{server.deployment_name}.api_key_env to the variable that "
               "holds it")
        raise DeploymentRefused(f"deployment {server.deployment_name} ({deployment.base_url}) answered "
                                f"{response.status_code} to GET /v1/models before any measurement; {fix}")
    if response.status_code != 200:
        raise ServerLost(f"GET /v1/models answered {response.status_code}")
    answer = response.json()
    if not isinstance(answer, dict) or not isinstance(answer.get("data"), list):
        raise ValueError("GET /v1/models did not answer an OpenAI model list ({\"data\": [...]})")
    data = answer["data"]
    ids = tuple(str(entry.get("id")) for entry in data if isinstance(entry, dict))
    mine = next((e for e in data if isinstance(e, dict) and e.get("id") == deployment.served_model), {})
    length = mine.get("max_model_len")
    return ids, int(length) if isinstance(length, int | float) else None


async def describe(server: ServerConfig, timeout_s: float = 20.0) -> SelfDescription:
    """Read what the deployment's server says about itself and check it against the declaration."""
    deployment = server.deployment
    assert deployment is not None and server.deployment_name is not None
    said = SelfDescription(deployment=server.deployment_name, base_url=deployment.base_url, runtime=server.runtime,
                           reachable=False, declared=deployment.declared.declared(),
                           tls_verify=deployment.tls.ca_bundle or deployment.tls.verify)
    try:
        async with http_client(deployment.base_url, timeout=timeout_s) as client:
            model_ids, max_model_len = await _models(client, server)
            metrics: MetricsSnapshot | None = None
            if deployment.metrics_urls():
                try:
                    metrics = await scrape(deployment.metrics_urls()[0], timeout_s=timeout_s)
                except ServerLost:
                    metrics = None
            revealed = await get_runtime(server.runtime).revealer(client, deployment.base_url, metrics)
    except (httpx.HTTPError, ServerLost, ValueError) as exc:
        problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return said.model_copy(update={"problem": problem, "checks": compare(server, Revealed(), (), None)})
    return said.model_copy(update={"reachable": True, "model_ids": model_ids, "max_model_len": max_model_len,
                                   "revealed": revealed,
                                   "checks": compare(server, revealed, model_ids, max_model_len)})


def read_self_description(path: Path) -> SelfDescription | None:
    """A stored self-description; None where the run stored none (or it cannot be read)."""
    try:
        return SelfDescription.model_validate_json(path.read_text())
    except (OSError, ValidationError):
        return None
