"""A deployment behind the same seam as a server the harness launched (``ServerProcess``): every stage that measures
a cell (load, parity, metrics, expert load, profile windows) reaches it through ``base_url`` and ``metrics_urls`` and
asks ``alive``, so none of them grows an "if launched" branch.

Entering it starts nothing: it is ready when ``GET /v1/models`` answers (with the deployment's key), and leaving it
stops nothing. It is alive until it stops answering: ``confirm_lost`` (called when a cell's requests or scrapes
failed) asks again for a few seconds, and a server that answers is not lost for one slow cell. Its log is the
harness's own notes about it, since the server's log is not on this machine.

``deployment_grants`` turns a plan's deployments into the access the run grants their origins
(``harness.endpoint_access``): the key read from the environment variable the matrix names, at the moment the run
starts, and held nowhere else.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Iterable
from pathlib import Path

import httpx

from harness.config.deployments import Deployment
from harness.endpoint_access import Grant, Politeness, http_client, origin_of
from harness.errors import ConfigError, LaunchError
from harness.plan.cells import ServerConfig
from harness.servers.process import LaunchSpec, ServerProcess

log = logging.getLogger(__name__)
PROBE_TIMEOUT_S = 10.0


def api_key(name: str, deployment: Deployment, source: str = "matrix") -> str | None:
    """The deployment's key from its environment variable; a variable named but unset is a ConfigError."""
    if deployment.api_key_env is None:
        return None
    value = (os.environ.get(deployment.api_key_env) or "").strip()
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ConfigError(source, f"deployments.{name}.api_key_env", f"${deployment.api_key_env} holds a control "
                          "character inside the key (a line break from the file it was read from?)",
                          f"export {deployment.api_key_env} with the key alone on one line")
    if not value:
        raise ConfigError(source, f"deployments.{name}.api_key_env", f"${deployment.api_key_env} is not set (or "
                          "empty) in the harness's environment", f"export {deployment.api_key_env}=<the key> before "
                          "the command (the key never goes in the matrix)")
    return value


def deployment_grants(servers: Iterable[ServerConfig], source: str = "matrix") -> list[Grant]:
    """The access each deployment's origins get for the run: its key (to its base URL's origin; to a metrics URL
    elsewhere only with ``metrics_auth``), its TLS verification and its politeness."""
    grants: dict[str, Grant] = {}
    owners: dict[str, str] = {}
    for server in servers:
        deployment, name = server.deployment, server.deployment_name
        if deployment is None or name is None:
            continue
        key = api_key(name, deployment, source)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        verify: bool | str = deployment.tls.ca_bundle or deployment.tls.verify
        origin = origin_of(deployment.base_url)
        if origin in owners:  # two deployments behind one origin (a gateway's paths): one access, one budget
            first = grants[origin]
            if first.headers != headers or first.verify != verify:
                raise ConfigError(source, f"deployments.{name}", f"{deployment.base_url} shares its origin {origin} "
                                  f"with deployment {owners[origin]}, with another key or TLS setting: the harness "
                                  "grants access per origin", "give both the same api_key_env and tls, or measure "
                                  "them in matrices of their own")
            assert first.politeness is not None and first.politeness.max_requests is not None
            first.politeness.max_requests += deployment.limits.max_requests
            continue
        owners[origin] = name
        grants[origin] = Grant(origin, headers, verify, Politeness(deployment.limits.max_requests))
        for url in deployment.metrics_urls():
            other = origin_of(url)
            if other not in grants:
                grants[other] = Grant(other, headers if deployment.metrics_auth else {}, verify)
    return list(grants.values())


class RemoteServer(ServerProcess):
    """``async with RemoteServer(server, log_path) as srv:`` -> the deployment, answering at ``srv.base_url``."""

    def __init__(self, server: ServerConfig, log_path: Path) -> None:
        deployment = server.deployment
        assert deployment is not None
        parts = httpx.URL(deployment.base_url)
        super().__init__(LaunchSpec(argv=(), health_path=None), parts.host, parts.port or 0, log_path,
                         server.settings.startup_timeout_s)
        self.name = server.deployment_name
        self.base_url = deployment.base_url
        self._metrics = list(deployment.metrics_urls())
        self._lost = False

    def _note(self, line: str) -> None:
        with self.log_path.open("a") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")

    async def _answers(self) -> tuple[bool, str]:
        try:
            async with http_client(self.base_url, timeout=PROBE_TIMEOUT_S) as client:
                response = await client.get(f"{self.base_url}/v1/models")
        except httpx.HTTPError as exc:
            return False, f"{type(exc).__name__}: {exc}"
        return response.status_code == 200, f"GET /v1/models answered {response.status_code}"

    async def __aenter__(self) -> RemoteServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._note(f"deployment {self.name} at {self.base_url}: measured as it is, not launched by the harness "
                   "(its own log is wherever it runs)")
        started = time.monotonic()
        ok, why = await self._answers()
        if not ok:
            self._note(f"not answering: {why}")
            raise LaunchError(f"deployment {self.name} at {self.base_url} does not answer: {why}", self.log_tail())
        self.ready_after_s = None  # not launched: there is no start-up to time
        log.info("deployment %s answers at %s (%.1f s)", self.name, self.base_url, time.monotonic() - started)
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    @property
    def alive(self) -> bool:
        return not self._lost

    @property
    def metrics_urls(self) -> list[str]:
        return list(self._metrics)

    @property
    def gone_reason(self) -> str:
        return f"deployment {self.name} stopped answering while the cell ran"

    async def confirm_lost(self, grace_s: float = 5.0) -> None:
        """Lost only when it does not answer within ``grace_s`` (a slow cell is not a dead server)."""
        deadline = time.monotonic() + grace_s
        while True:
            ok, why = await self._answers()
            if ok:
                return
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(1.0)
        self._note(f"stopped answering: {why}")
        log.warning("deployment %s stopped answering: %s", self.name, why)
        self._lost = True

    async def stop(self) -> None:
        return None  # not ours to stop

    async def wait_exit(self, timeout_s: float) -> int | None:
        return None
