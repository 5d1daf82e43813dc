"""Before a run's first cell: the deployments' access granted for the run only, and what each deployment says about
itself read, stored without its key and checked; against a small real server on 127.0.0.1 that wants a key."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.config import load_matrix
from harness.endpoint_access import headers_for, politeness_for
from harness.errors import DeploymentRefused
from harness.pipeline.deployment_preflight import deployment_access, describe_deployments, read_deployments
from harness.plan import Plan, expand
from harness.servers.self_description import SelfDescription, read_self_description
from harness.store import Store

from tests.support.deployment_matrices import KEY, MATRIX, WriteMatrix


@dataclass
class KeyedServer:
    """A deployment that lists ``qwen3-recall`` to a request carrying KEY and answers 401 to any other."""

    url: str = ""
    seen: list[str | None] = field(default_factory=list)


@pytest.fixture
def keyed() -> Iterator[KeyedServer]:
    state = KeyedServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            auth = self.headers.get("Authorization")
            state.seen.append(auth)
            ok = auth == f"Bearer {KEY}" and self.path == "/v1/models"
            body = b'{"data": [{"id": "qwen3-recall", "max_model_len": 4096}]}' if ok else b'{"error": "no"}'
            self.send_response(200 if ok else 401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield state
    finally:
        httpd.shutdown()
        thread.join(5)
        httpd.server_close()


def plan_for(write_matrix: WriteMatrix, deployments: dict[str, dict[str, Any]], **top: Any) -> Plan:
    """A plan of these deployments (each serving ``qwen3-recall`` of model ``m``, metrics off)."""
    full = {name: {"model": "m", "served_model": "qwen3-recall", "metrics": "none", **fields}
            for name, fields in deployments.items()}
    return expand(load_matrix(write_matrix(yaml.safe_dump({**MATRIX, "deployments": full, **top}, sort_keys=False))))


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PROD_KEY", KEY)
    return KEY


async def test_each_deployments_self_description_is_stored_without_its_key(
        write_matrix: WriteMatrix, keyed: KeyedServer, key: str, tmp_path: Path) -> None:
    plan = plan_for(write_matrix, {"prod": {"base_url": keyed.url, "api_key_env": "PROD_KEY"}},
                    axes={"runtime": ["vllm"]})  # a launched server beside it: not described
    store = Store(tmp_path / "reports", plan.matrix.name)
    with deployment_access(plan):
        (said,) = await describe_deployments(plan, store)
    assert said.reachable and said.model_ids == ("qwen3-recall",) and said.contradictions == ()
    assert keyed.seen == [f"Bearer {key}"]
    stored = store.deployment_path("prod")
    assert key not in stored.read_text() and read_self_description(stored) == said
    assert sorted(p.name for p in stored.parent.iterdir()) == ["prod.json"]


async def test_without_a_store_nothing_is_written(write_matrix: WriteMatrix, keyed: KeyedServer, key: str,
                                                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    plan = plan_for(write_matrix, {"prod": {"base_url": keyed.url, "api_key_env": "PROD_KEY"}})
    with deployment_access(plan):
        assert len(await describe_deployments(plan)) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["matrix.yaml"]


async def test_an_unreachable_deployment_is_stored_and_warned_about(
        write_matrix: WriteMatrix, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plan = plan_for(write_matrix, {"gone": {"base_url": "http://127.0.0.1:1"}})
    store = Store(tmp_path / "reports", plan.matrix.name)
    with deployment_access(plan), caplog.at_level(logging.WARNING):
        (said,) = await describe_deployments(plan, store)
    assert not said.reachable and said.problem is not None
    assert read_self_description(store.deployment_path("gone")) == said
    assert "deployment gone at http://127.0.0.1:1 does not answer" in caplog.text


async def test_a_contradiction_is_a_warning_before_the_run(
        write_matrix: WriteMatrix, keyed: KeyedServer, key: str, caplog: pytest.LogCaptureFixture) -> None:
    plan = plan_for(write_matrix, {"prod": {"base_url": keyed.url, "api_key_env": "PROD_KEY",
                                            "served_model": "llama-3-8b"}})
    with deployment_access(plan), caplog.at_level(logging.WARNING):
        (said,) = await describe_deployments(plan)
    assert [c.fact for c in said.contradictions] == ["served_model"]
    assert "deployment prod: declared served_model llama-3-8b, the server says qwen3-recall" in caplog.text


async def test_a_refused_key_stops_the_run_before_anything_is_stored(
        write_matrix: WriteMatrix, keyed: KeyedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROD_KEY", "sk-revoked")
    plan = plan_for(write_matrix, {"prod": {"base_url": keyed.url, "api_key_env": "PROD_KEY"}})
    store = Store(tmp_path / "reports", plan.matrix.name)
    with deployment_access(plan), pytest.raises(DeploymentRefused, match=r"deployment prod .* answered 401"):
        await describe_deployments(plan, store)
    assert not store.deployment_path("prod").exists()


async def test_the_plan_shows_a_refusal_as_text_and_grants_nothing_after(
        write_matrix: WriteMatrix, keyed: KeyedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROD_KEY", "sk-revoked")
    plan = plan_for(write_matrix, {"prod": {"base_url": keyed.url, "api_key_env": "PROD_KEY"},
                                   "gone": {"base_url": "http://127.0.0.1:1"}},
                    axes={"runtime": ["vllm"]})
    found = await read_deployments(plan)
    assert list(found) == ["prod", "gone"]  # the launched server is not a deployment
    refused, unreachable = found["prod"], found["gone"]
    assert isinstance(refused, str) and "deployment prod" in refused and "$PROD_KEY" in refused
    assert "sk-revoked" not in refused
    assert isinstance(unreachable, SelfDescription) and not unreachable.reachable
    assert headers_for(keyed.url) == {} and politeness_for(keyed.url) is None  # the grant ended with the block


def test_deployment_access_grants_the_plans_origins_for_the_block(write_matrix: WriteMatrix, key: str) -> None:
    plan = plan_for(write_matrix, {"prod": {"base_url": "http://10.0.0.5:8000", "api_key_env": "PROD_KEY",
                                            "limits": {"max_requests": 7}}})
    with deployment_access(plan):
        assert headers_for("http://10.0.0.5:8000/v1/completions") == {"Authorization": f"Bearer {key}"}
        politeness = politeness_for("http://10.0.0.5:8000")
        assert politeness is not None and politeness.max_requests == 7
    assert headers_for("http://10.0.0.5:8000/v1/completions") == {}
