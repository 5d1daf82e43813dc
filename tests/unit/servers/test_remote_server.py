"""A deployment behind the launched server's seam, against a small real HTTP server on 127.0.0.1: ready when
``/v1/models`` answers, lost only when it stops answering, never stopped by the harness; and the access its origins
are granted (its key to its own origin only)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.config import load_matrix
from harness.endpoint_access import granted, origin_of
from harness.errors import ConfigError, LaunchError
from harness.plan import ServerConfig, expand
from harness.servers.remote_server import RemoteServer, api_key, deployment_grants

from tests.support.deployment_matrices import KEY, MATRIX, WriteMatrix


@dataclass
class Deployment:
    """A server someone else started: answers ``GET /v1/models`` with ``status``; keeps each request's path and
    Authorization header; ``halt`` stops it (it stops answering)."""

    url: str = ""
    status: int = 200
    seen: list[tuple[str, str | None]] = field(default_factory=list)
    halt: Callable[[], None] = lambda: None


@pytest.fixture
def deployment() -> Iterator[Deployment]:
    state = Deployment()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            state.seen.append((self.path, self.headers.get("Authorization")))
            body = b'{"object": "list", "data": [{"id": "qwen3-recall"}]}' if state.status == 200 else b"{}"
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None  # quiet: the test reads ``seen``

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()

    def halt() -> None:
        if thread.is_alive():
            httpd.shutdown()
            thread.join(5)
        httpd.server_close()

    state.url, state.halt = f"http://127.0.0.1:{httpd.server_address[1]}", halt
    try:
        yield state
    finally:
        halt()


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def server_at(write_matrix: WriteMatrix, base_url: str, **fields: Any) -> ServerConfig:
    deployment = {"base_url": base_url, "model": "m", "served_model": "qwen3-recall", **fields}
    (group,) = expand(load_matrix(write_matrix(yaml.safe_dump({**MATRIX, "deployments": {"prod": deployment}})))).groups
    return group.server


async def test_it_enters_when_the_deployment_answers(write_matrix: WriteMatrix, deployment: Deployment,
                                                     tmp_path: Path) -> None:
    log = tmp_path / "servers" / "prod.log"
    async with RemoteServer(server_at(write_matrix, deployment.url), log) as srv:
        assert srv.base_url == deployment.url and srv.alive and srv.ready_after_s is None
    assert deployment.seen == [("/v1/models", None)]
    assert "measured as it is, not launched by the harness" in log.read_text()


async def test_a_prefix_in_the_base_url_is_kept(write_matrix: WriteMatrix, deployment: Deployment,
                                               tmp_path: Path) -> None:
    server = server_at(write_matrix, deployment.url + "/team-a/")
    async with RemoteServer(server, tmp_path / "prod.log") as srv:
        assert srv.base_url == deployment.url + "/team-a"
    assert deployment.seen[0][0] == "/team-a/v1/models"


async def test_a_deployment_that_does_not_answer_fails_to_enter(write_matrix: WriteMatrix, tmp_path: Path) -> None:
    log = tmp_path / "prod.log"
    with pytest.raises(LaunchError, match="deployment prod at http://127.0.0.1:.* does not answer") as failed:
        async with RemoteServer(server_at(write_matrix, f"http://127.0.0.1:{closed_port()}"), log):
            pytest.fail("entered a deployment that does not answer")
    assert "not answering" in failed.value.log_tail


async def test_a_deployment_that_refuses_fails_to_enter(write_matrix: WriteMatrix, deployment: Deployment,
                                                       tmp_path: Path) -> None:
    deployment.status = 401
    with pytest.raises(LaunchError, match="GET /v1/models answered 401"):
        async with RemoteServer(server_at(write_matrix, deployment.url), tmp_path / "prod.log"):
            pytest.fail("entered a deployment that refused")


@pytest.mark.parametrize(("metrics", "expected"), [
    ("self", ["{url}"]), ("none", []), ("http://10.0.0.9:9090/metrics", ["http://10.0.0.9:9090"]),
])
def test_metrics_urls_follow_the_matrix(write_matrix: WriteMatrix, tmp_path: Path, metrics: str,
                                        expected: list[str]) -> None:
    url = "http://10.0.0.5:8000"
    srv = RemoteServer(server_at(write_matrix, url, metrics=metrics), tmp_path / "prod.log")
    assert srv.metrics_urls == [e.format(url=url) for e in expected]


async def test_a_server_that_still_answers_is_not_lost(write_matrix: WriteMatrix, deployment: Deployment,
                                                      tmp_path: Path) -> None:
    async with RemoteServer(server_at(write_matrix, deployment.url), tmp_path / "prod.log") as srv:
        await srv.confirm_lost(grace_s=0)
        assert srv.alive


async def test_a_server_that_stopped_answering_is_lost(write_matrix: WriteMatrix, deployment: Deployment,
                                                      tmp_path: Path) -> None:
    log = tmp_path / "prod.log"
    async with RemoteServer(server_at(write_matrix, deployment.url), log) as srv:
        deployment.halt()
        await srv.confirm_lost(grace_s=0)
        assert not srv.alive and srv.gone_reason == "deployment prod stopped answering while the cell ran"
    assert "stopped answering: ConnectError" in log.read_text()


async def test_leaving_and_stopping_touch_nothing(write_matrix: WriteMatrix, deployment: Deployment,
                                                  tmp_path: Path) -> None:
    async with RemoteServer(server_at(write_matrix, deployment.url), tmp_path / "prod.log") as srv:
        await srv.stop()
        assert await srv.wait_exit(0.1) is None
    assert [path for path, _ in deployment.seen] == ["/v1/models"]  # one probe, no shutdown request of any kind
    async with RemoteServer(server_at(write_matrix, deployment.url), tmp_path / "prod.log"):
        pass  # still there after the harness left it


async def test_the_granted_key_goes_with_each_probe(write_matrix: WriteMatrix, deployment: Deployment,
                                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROD_KEY", KEY)
    server = server_at(write_matrix, deployment.url, api_key_env="PROD_KEY")
    with granted(deployment_grants([server])):
        async with RemoteServer(server, tmp_path / "prod.log"):
            pass
    assert deployment.seen == [("/v1/models", f"Bearer {KEY}")]
    assert KEY not in (tmp_path / "prod.log").read_text()


def test_the_key_is_granted_to_the_base_urls_origin_only(write_matrix: WriteMatrix,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROD_KEY", KEY)
    server = server_at(write_matrix, "https://gateway.example/serving", api_key_env="PROD_KEY",
                       metrics="http://pod.internal:9090", tls={"ca_bundle": "/etc/ssl/team-ca.pem"},
                       limits={"max_requests": 300})
    base, metrics = deployment_grants([server])
    assert base.origin == "https://gateway.example:443" and dict(base.headers) == {"Authorization": f"Bearer {KEY}"}
    assert base.verify == "/etc/ssl/team-ca.pem"
    assert base.politeness is not None and base.politeness.max_requests == 300
    assert metrics.origin == "http://pod.internal:9090" and dict(metrics.headers) == {}
    assert metrics.politeness is None  # scrapes are not inference requests: they spend no budget
    assert KEY not in repr(base)


def test_metrics_auth_sends_the_key_to_the_metrics_host_too(write_matrix: WriteMatrix,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROD_KEY", KEY)
    server = server_at(write_matrix, "http://10.0.0.5:8000", api_key_env="PROD_KEY",
                       metrics="http://10.0.0.5:9090", metrics_auth=True)
    assert [dict(g.headers) for g in deployment_grants([server])] == [{"Authorization": f"Bearer {KEY}"}] * 2


def test_a_deployment_without_a_key_or_metrics_elsewhere_gets_one_grant(write_matrix: WriteMatrix) -> None:
    server = server_at(write_matrix, "http://10.0.0.5:8000", tls={"verify": False})
    (grant,) = deployment_grants([server])
    assert grant.origin == origin_of("http://10.0.0.5:8000") and dict(grant.headers) == {}
    assert grant.verify is False and grant.politeness is not None and grant.politeness.max_requests == 5000


def test_two_deployments_at_one_origin_with_different_keys_are_refused(write_matrix: WriteMatrix,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROD_KEY", KEY)
    monkeypatch.setenv("LAB_KEY", "sk-lab")
    shared = {"model": "m", "served_model": "qwen3-recall", "metrics": "none"}
    deployments = {"prod": {**shared, "base_url": "https://gateway.example/prod", "api_key_env": "PROD_KEY"},
                   "lab": {**shared, "base_url": "https://gateway.example/lab", "api_key_env": "LAB_KEY"}}
    plan = expand(load_matrix(write_matrix(yaml.safe_dump({**MATRIX, "deployments": deployments}, sort_keys=False))))
    # One origin holds one grant, so the only safe answer is to refuse; what happens instead: prod's requests go out
    # with lab's key (and lab's budget), and nothing says so.
    with pytest.raises(ConfigError, match="deployments.lab"):
        deployment_grants(g.server for g in plan.groups)


def test_launched_servers_are_granted_nothing(write_matrix: WriteMatrix) -> None:
    launched = expand(load_matrix(write_matrix(yaml.safe_dump(MATRIX)))).groups[0].server
    assert deployment_grants([launched]) == []


@pytest.mark.parametrize("value", [None, ""])
def test_a_named_key_variable_that_is_unset_is_a_config_error(write_matrix: WriteMatrix,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              value: str | None) -> None:
    monkeypatch.setenv("OTHER_SECRET", KEY)
    if value is None:
        monkeypatch.delenv("PROD_KEY", raising=False)
    else:
        monkeypatch.setenv("PROD_KEY", value)
    server = server_at(write_matrix, "http://10.0.0.5:8000", api_key_env="PROD_KEY")
    with pytest.raises(ConfigError) as refused:
        deployment_grants([server], source="m.yaml")
    assert refused.value.source == "m.yaml" and refused.value.key == "deployments.prod.api_key_env"
    assert "$PROD_KEY is not set" in refused.value.problem and "export PROD_KEY=" in refused.value.fix
    assert KEY not in str(refused.value)


def test_api_key_reads_the_variable_when_the_run_starts(write_matrix: WriteMatrix,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    server = server_at(write_matrix, "http://10.0.0.5:8000", api_key_env="PROD_KEY")
    assert server.deployment is not None
    monkeypatch.setenv("PROD_KEY", "first")
    assert api_key("prod", server.deployment) == "first"
    monkeypatch.setenv("PROD_KEY", "rotated")
    assert api_key("prod", server.deployment) == "rotated"
    plain = server_at(write_matrix, "http://10.0.0.5:8000")
    assert plain.deployment is not None and api_key("prod", plain.deployment) is None
