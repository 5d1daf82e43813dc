"""A deployment as ``harness plan`` and the report show it: where the harness sends what, with which credentials and
limits, what its owner declared, and what its server said about itself (agrees, CONTRADICTS, not verified)."""

from __future__ import annotations

from harness.endpoint_access import origin_of
from harness.plan.cells import ServerConfig
from harness.servers.self_description import SelfDescription


def _what_is_sent(server: ServerConfig) -> list[str]:
    deployment = server.deployment
    assert deployment is not None
    limits = deployment.limits
    sent = [f"inference POSTs to {deployment.base_url}/v1/... (at most {limits.max_requests} requests in the run, "
            f"{limits.max_concurrency} in flight), GET {deployment.base_url}/v1/models"]
    metrics = deployment.metrics_urls()
    sent.append(f"GET {metrics[0]}/metrics around each cell" if metrics else "no metric scrapes (metrics: none)")
    if deployment.expert_load is not None and deployment.expert_load.enabled and server.expert_load:
        sent.append("the engine's expert-load collector endpoints around each cell")
    if deployment.profile:
        sent.append("/start_profile and /stop_profile for the cells profile.cells selects")
    return sent


def _credentials(server: ServerConfig) -> str:
    deployment = server.deployment
    assert deployment is not None
    if deployment.api_key_env is None:
        key = "no API key"
    else:
        where = origin_of(deployment.base_url)
        if deployment.metrics_auth and deployment.metrics not in ("self", "none"):
            where += f" and {origin_of(deployment.metrics)}"
        key = f"API key from ${deployment.api_key_env}, sent to {where} only"
    if deployment.scheme == "http":
        return f"{key}; plain HTTP (no TLS)"
    tls = deployment.tls
    how = ("certificate verification OFF" if not tls.verify else
           f"certificate verified against {tls.ca_bundle}" if tls.ca_bundle else
           "certificate verified against the system's trust store")
    return f"{key}; TLS, {how}"


def deployment_lines(server: ServerConfig, said: SelfDescription | str | None) -> list[str]:
    """The plan's lines for one deployment; ``said`` is its self-description, or why it could not be read."""
    deployment = server.deployment
    assert deployment is not None
    lines = [f"  deployment (not launched): {deployment.base_url}, serving {deployment.served_model!r} "
             f"(runtime {server.runtime}; model {server.model_name} for its tokenizer and limits)"]
    lines += [f"  sends: {line}" for line in _what_is_sent(server)]
    lines.append(f"  credentials: {_credentials(server)}")
    declared = deployment.declared.labels()
    lines.append("  declared: " + (", ".join(f"{k} {label}" for k, label in declared.items())
                                   or "nothing (every recipe figure of this deployment is unknown)"))
    if isinstance(said, str) or said is None:
        lines.append(f"  what the server says about itself: not read ({said or 'not asked'})")
        return lines
    if not said.reachable:
        lines.append(f"  what the server says about itself: not reachable now ({said.problem})")
    version = f" {said.revealed.version}" if said.revealed.version else ""
    lines.append(f"  the server says ({said.runtime}{version}):")
    for check in said.checks:
        status = check.status.upper() if check.status == "contradicts" else check.status
        declared_value = check.declared if check.declared is not None else "-"
        observed = check.observed if check.observed is not None else "-"
        lines.append(f"    {check.fact}: declared {declared_value}, server {observed}: {status}")
    return lines
