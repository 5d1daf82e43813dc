"""A deployment as the plan and the report show it: where requests go and how many, which key goes where (its
variable, never its value), how the certificate is checked, what was declared and what the server said."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from harness.config import load_matrix
from harness.plan import ServerConfig, expand
from harness.report.deployment_view import deployment_lines
from harness.servers.revealed import Revealed
from harness.servers.self_description import Check, SelfDescription

from tests.support.deployment_matrices import KEY, MATRIX, WriteMatrix


def server(write_matrix: WriteMatrix, **fields: Any) -> ServerConfig:
    deployment = {"base_url": "https://gateway.example/serving", "model": "m", "served_model": "qwen3-recall",
                  "runtime": "vllm", **fields}
    (group,) = expand(load_matrix(write_matrix(yaml.safe_dump({**MATRIX, "deployments": {"prod": deployment}})))).groups
    return group.server


def said(*checks: Check, reachable: bool = True, problem: str | None = None) -> SelfDescription:
    return SelfDescription(deployment="prod", base_url="https://gateway.example/serving", runtime="vllm",
                           reachable=reachable, problem=problem, revealed=Revealed(version="0.32.0"), checks=checks)


def text(lines: list[str]) -> str:
    return "\n".join(lines)


def test_it_says_where_what_is_sent_and_how_much(write_matrix: WriteMatrix) -> None:
    shown = text(deployment_lines(server(write_matrix, limits={"max_requests": 300, "max_concurrency": 4}), None))
    assert "deployment (not launched): https://gateway.example/serving, serving 'qwen3-recall'" in shown
    assert ("inference POSTs to https://gateway.example/serving/v1/... (at most 300 requests in the run, 4 in "
            "flight)") in shown
    assert "GET https://gateway.example/serving/metrics around each cell" in shown
    assert "/start_profile" not in shown  # profiling is off unless the matrix allows it


def test_it_names_the_keys_variable_and_where_it_goes_never_the_key(write_matrix: WriteMatrix,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROD_KEY", KEY)
    shown = text(deployment_lines(server(write_matrix, api_key_env="PROD_KEY"), None))
    assert "credentials: API key from $PROD_KEY, sent to https://gateway.example:443 only" in shown
    assert KEY not in shown
    elsewhere = server(write_matrix, api_key_env="PROD_KEY", metrics="http://pod.internal:9090", metrics_auth=True)
    assert "sent to https://gateway.example:443 and http://pod.internal:9090 only" in text(
        deployment_lines(elsewhere, None))


@pytest.mark.parametrize(("fields", "says"), [
    ({"tls": {"verify": False}}, "no API key; TLS, certificate verification OFF"),
    ({"tls": {"ca_bundle": "/etc/ssl/team-ca.pem"}}, "certificate verified against /etc/ssl/team-ca.pem"),
    ({}, "certificate verified against the system's trust store"),
    ({"base_url": "http://10.0.0.5:8000"}, "no API key; plain HTTP (no TLS)"),
])
def test_it_says_how_the_certificate_is_checked(write_matrix: WriteMatrix, fields: dict[str, Any], says: str) -> None:
    assert says in text(deployment_lines(server(write_matrix, **fields), None))


def test_it_lists_the_optional_calls_the_matrix_allows(write_matrix: WriteMatrix) -> None:
    shown = text(deployment_lines(server(write_matrix, metrics="none", profile=True), None))
    assert "no metric scrapes (metrics: none)" in shown
    assert "/start_profile and /stop_profile for the cells profile.cells selects" in shown


def test_it_shows_what_was_declared_or_that_nothing_was(write_matrix: WriteMatrix) -> None:
    declared = server(write_matrix, declared={"precision": "fp8", "parallel": {"tp": 2}})
    assert "  declared: precision fp8, parallel tp2" in deployment_lines(declared, None)
    assert "  declared: nothing (every recipe figure of this deployment is unknown)" in deployment_lines(
        server(write_matrix), None)


def test_a_contradiction_stands_out(write_matrix: WriteMatrix) -> None:
    checks = (Check(fact="served_model", declared="qwen3-recall", observed="qwen3-recall", status="agrees"),
              Check(fact="kv_cache", declared="auto", observed="fp8", status="contradicts"),
              Check(fact="tp", declared="2", observed=None, status="not verified"))
    lines = deployment_lines(server(write_matrix), said(*checks))
    assert "  the server says (vllm 0.32.0):" in lines
    assert "    kv_cache: declared auto, server fp8: CONTRADICTS" in lines
    assert "    served_model: declared qwen3-recall, server qwen3-recall: agrees" in lines
    assert "    tp: declared 2, server -: not verified" in lines


def test_a_self_description_that_could_not_be_read_says_why(write_matrix: WriteMatrix) -> None:
    refused = "deployment prod (https://gateway.example/serving) answered 401 to GET /v1/models"
    assert deployment_lines(server(write_matrix), refused)[-1] == (
        f"  what the server says about itself: not read ({refused})")
    unasked = deployment_lines(server(write_matrix), None)[-1]
    assert unasked == "  what the server says about itself: not read (not asked)"
    down = text(deployment_lines(server(write_matrix), said(reachable=False, problem="ConnectError: refused")))
    assert "not reachable now (ConnectError: refused)" in down
