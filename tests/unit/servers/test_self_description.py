"""Before a deployment's first cell: what its server says about itself (``/v1/models`` and the engine's own
endpoints, over ``httpx.MockTransport``) checked against what its owner declared; a refused key stops the run, an
unreachable server is recorded."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from harness.config import load_matrix
from harness.endpoint_access import OriginAuth, granted
from harness.errors import DeploymentRefused
from harness.plan import ServerConfig, expand
from harness.servers import deployment_grants, prometheus, self_description
from harness.servers.revealed import Revealed
from harness.servers.self_description import (
    Check,
    SelfDescription,
    compare,
    declared_facts,
    describe,
    read_self_description,
)

BASE = "http://deployment.test:8000"
KEY = "sk-live-DO-NOT-PRINT"
MATRIX: dict[str, Any] = {
    "name": "t",
    "models": {"m": {"id": "fixture:tiny-qwen3-recall"}},  # max_model_len 2048
    "workloads": {"w": {"kind": "random", "input_tokens": 16, "output_tokens": 8, "num_requests": 4}},
}
MODELS = {"object": "list", "data": [{"id": "qwen3-recall", "object": "model", "max_model_len": 4096},
                                     {"id": "qwen3-recall-lora", "object": "model"}]}
SGLANG_INFO = {"tp_size": 2, "dp_size": 1, "ep_size": 2, "quantization": None, "dtype": "bfloat16",
               "kv_cache_dtype": "auto", "speculative_algorithm": "NGRAM", "expert_distribution_recorder_mode": "stat",
               "version": "0.5.23", "api_key": "SECRET-XYZ", "admin_api_key": "SECRET2"}
VLLM_METRICS = """\
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="fp8",enable_prefix_caching="True"} 1.0
"""

Routes = dict[str, httpx.Response | Exception]
Serve = Callable[[Routes], list[httpx.Request]]


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Serve:
    """Answer every client ``describe`` makes (its own and the metrics scrape's) from ``routes`` (404 elsewhere),
    with the origins' granted headers added as ``http_client`` adds them; returns the requests, as sent."""

    def install(routes: Routes) -> list[httpx.Request]:
        sent: list[httpx.Request] = []

        def handler(request: httpx.Request) -> httpx.Response:
            sent.append(request)
            answer = routes.get(request.url.path, httpx.Response(404))
            if isinstance(answer, Exception):
                raise answer
            return answer

        def client(url: str | None = None, **kwargs: Any) -> httpx.AsyncClient:
            kwargs.pop("transport", None)
            return httpx.AsyncClient(auth=OriginAuth(), transport=httpx.MockTransport(handler), **kwargs)

        for module in (self_description, prometheus):
            monkeypatch.setattr(module, "http_client", client)
        return sent

    return install


def deployed(write_matrix: Callable[[str], Path], **fields: Any) -> ServerConfig:
    """The server of one deployment ``prod`` at BASE serving ``qwen3-recall``, with ``fields`` set."""
    deployment = {"base_url": BASE, "model": "m", "served_model": "qwen3-recall", **fields}
    (group,) = expand(load_matrix(write_matrix(yaml.safe_dump({**MATRIX, "deployments": {"prod": deployment}})))).groups
    return group.server


def statuses(said: SelfDescription) -> dict[str, str]:
    return {check.fact: check.status for check in said.checks}


def sglang_routes(**info: Any) -> Routes:
    return {"/v1/models": httpx.Response(200, json=MODELS),
            "/get_server_info": httpx.Response(200, json={**SGLANG_INFO, **info})}


async def test_a_declaration_the_server_confirms_agrees(write_matrix: Callable[[str], Path], serve: Serve) -> None:
    serve(sglang_routes())
    server = deployed(write_matrix, runtime="sglang", metrics="none",
                      declared={"precision": "bf16", "parallel": {"tp": 2, "ep": 2}, "speculation": "ngram"})
    said = await describe(server)
    assert said.reachable and said.problem is None
    assert said.model_ids == ("qwen3-recall", "qwen3-recall-lora") and said.max_model_len == 4096
    assert said.revealed.version == "0.5.23"
    assert statuses(said) == {"served_model": "agrees", "max_model_len": "agrees", "weights": "agrees",
                              "kv_cache": "agrees", "tp": "agrees", "dp": "agrees", "ep": "agrees",
                              "speculation": "agrees", "expert_load": "revealed"}
    assert said.contradictions == () and said.warnings() == []
    assert said.declared["parallel"] == {"tp": 2, "dp": 1, "ep": 2}  # as declared, the defaults filled in
    assert said.declared["speculation"]["method"] == "ngram" and set(said.declared) == {"precision", "parallel",
                                                                                          "speculation"}
    assert "SECRET" not in said.model_dump_json()


async def test_a_declaration_the_server_denies_contradicts_and_warns(write_matrix: Callable[[str], Path],
                                                                    serve: Serve) -> None:
    serve(sglang_routes(speculative_algorithm=None))
    server = deployed(write_matrix, runtime="sglang", metrics="none",
                      declared={"precision": "fp8", "speculation": "ngram"})
    said = await describe(server)
    assert [(c.fact, c.declared, c.observed) for c in said.contradictions] == [("weights", "fp8", "bf16"),
                                                                               ("speculation", "ngram", "off")]
    assert said.warnings() == ["deployment prod: declared weights fp8, the server says bf16",
                               "deployment prod: declared speculation ngram, the server says off"]


async def test_what_vllm_does_not_reveal_is_not_verified(write_matrix: Callable[[str], Path], serve: Serve) -> None:
    sent = serve({"/v1/models": httpx.Response(200, json=MODELS),
                  "/version": httpx.Response(200, json={"version": "0.32.0"}),
                  "/metrics": httpx.Response(200, text=VLLM_METRICS)})
    server = deployed(write_matrix, runtime="vllm", declared={"precision": "bf16-kvfp8", "parallel": {"tp": 2}})
    said = await describe(server)
    assert statuses(said) == {"served_model": "agrees", "max_model_len": "agrees", "weights": "not verified",
                              "kv_cache": "agrees", "tp": "not verified", "dp": "not verified",
                              "ep": "not verified"}
    assert said.revealed.version == "0.32.0" and said.revealed.config["block_size"] == "16"
    assert {r.url.path for r in sent} == {"/v1/models", "/version", "/metrics"}


async def test_what_nobody_declared_is_shown_as_revealed(write_matrix: Callable[[str], Path], serve: Serve) -> None:
    serve(sglang_routes())
    said = await describe(deployed(write_matrix, runtime="sglang", metrics="none"))
    revealed = {c.fact: (c.declared, c.observed) for c in said.checks if c.status == "revealed"}
    assert revealed == {"weights": (None, "bf16"), "kv_cache": (None, "auto"), "tp": (None, "2"), "dp": (None, "1"),
                        "ep": (None, "2"), "speculation": (None, "ngram"), "expert_load": (None, "on")}


async def test_a_served_model_the_server_does_not_list_contradicts(write_matrix: Callable[[str], Path],
                                                                  serve: Serve) -> None:
    serve({"/v1/models": httpx.Response(200, json={"data": [{"id": "llama-3-8b", "max_model_len": 1024}]})})
    said = await describe(deployed(write_matrix, metrics="none"))
    served, length = said.checks[:2]
    assert served == Check(fact="served_model", declared="qwen3-recall", observed="llama-3-8b",
                           status="contradicts")
    assert (length.status, length.observed) == ("not verified", None)  # the length of another model says nothing


async def test_a_context_shorter_than_the_model_needs_contradicts(write_matrix: Callable[[str], Path],
                                                                 serve: Serve) -> None:
    serve({"/v1/models": httpx.Response(200, json={"data": [{"id": "qwen3-recall", "max_model_len": 1024}]})})
    said = await describe(deployed(write_matrix, metrics="none"))
    assert said.checks[1] == Check(fact="max_model_len", declared="2048", observed="1024", status="contradicts")


async def test_an_empty_model_list_verifies_nothing(write_matrix: Callable[[str], Path], serve: Serve) -> None:
    serve({"/v1/models": httpx.Response(200, json={"data": []})})
    said = await describe(deployed(write_matrix, metrics="none"))
    assert said.reachable and statuses(said) == {"served_model": "not verified", "max_model_len": "not verified"}


async def test_an_unknown_engine_is_asked_only_for_its_models(write_matrix: Callable[[str], Path],
                                                             serve: Serve) -> None:
    sent = serve({"/v1/models": httpx.Response(200, json=MODELS)})
    said = await describe(deployed(write_matrix, metrics="none", declared={"precision": "fp8"}))
    assert [r.url.path for r in sent] == ["/v1/models"]
    assert said.runtime == "openai" and statuses(said)["weights"] == "not verified"


@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_stops_the_run_naming_the_deployment_and_variable(
        write_matrix: Callable[[str], Path], serve: Serve, monkeypatch: pytest.MonkeyPatch, status: int) -> None:
    sent = serve({"/v1/models": httpx.Response(status, json={"error": "invalid api key"})})
    monkeypatch.setenv("PROD_KEY", KEY)
    server = deployed(write_matrix, metrics="none", api_key_env="PROD_KEY")
    with granted(deployment_grants([server])), pytest.raises(DeploymentRefused) as refused:
        await describe(server)
    message = str(refused.value)
    assert "deployment prod" in message and f"answered {status}" in message and "$PROD_KEY" in message
    assert KEY not in message
    assert sent[0].headers["authorization"] == f"Bearer {KEY}"  # the key was sent, to its origin


async def test_a_key_asked_for_but_not_configured_says_where_to_name_it(write_matrix: Callable[[str], Path],
                                                                       serve: Serve) -> None:
    serve({"/v1/models": httpx.Response(401)})
    with pytest.raises(DeploymentRefused, match=r"set deployments\.prod\.api_key_env"):
        await describe(deployed(write_matrix, metrics="none"))


@pytest.mark.parametrize(("answer", "problem"), [
    (httpx.ConnectError("connection refused"), "ConnectError: connection refused"),
    (httpx.Response(502, text="bad gateway"), "ServerLost: GET /v1/models answered 502"),
    (httpx.Response(200, text="<html>login</html>"), "JSONDecodeError"),
])
async def test_a_server_that_cannot_be_read_is_recorded_unreachable(
        write_matrix: Callable[[str], Path], serve: Serve, answer: httpx.Response | Exception, problem: str) -> None:
    serve({"/v1/models": answer})
    said = await describe(deployed(write_matrix, metrics="none", declared={"precision": "fp8"}))
    assert not said.reachable and said.problem is not None and said.problem.startswith(problem)
    assert statuses(said) == {"served_model": "not verified", "max_model_len": "not verified",
                              "weights": "not verified", "kv_cache": "not verified"}
    assert said.model_ids == () and said.declared == {"precision": {"weights": "fp8", "kv_cache": "auto"}}


async def test_metrics_that_cannot_be_scraped_leave_the_rest_read(write_matrix: Callable[[str], Path],
                                                                 serve: Serve) -> None:
    serve({"/v1/models": httpx.Response(200, json=MODELS), "/version": httpx.Response(200, json={"version": "0.32.0"}),
           "/metrics": httpx.ConnectError("refused")})
    said = await describe(deployed(write_matrix, runtime="vllm", declared={"precision": "bf16-kvfp8"}))
    assert said.reachable and said.revealed.version == "0.32.0" and statuses(said)["kv_cache"] == "not verified"


async def test_tls_settings_are_recorded_as_declared(write_matrix: Callable[[str], Path], serve: Serve) -> None:
    serve({"/v1/models": httpx.Response(200, json=MODELS)})
    bundle = await describe(deployed(write_matrix, base_url="https://deployment.test", metrics="none",
                                     tls={"ca_bundle": "/etc/ssl/team-ca.pem"}))
    off = await describe(deployed(write_matrix, base_url="https://deployment.test", metrics="none",
                                  tls={"verify": False}))
    assert (bundle.tls_verify, off.tls_verify) == ("/etc/ssl/team-ca.pem", False)


def test_declared_facts_speak_the_servers_vocabulary(write_matrix: Callable[[str], Path]) -> None:
    server = deployed(write_matrix, declared={"precision": "int8-kvfp8", "parallel": {"tp": 4, "dp": 2, "ep": 8},
                                              "speculation": {"method": "mtp", "k": 2}},
                      expert_load={"enabled": False})
    assert declared_facts(server) == {"weights": "int8", "kv_cache": "fp8", "tp": "4", "dp": "2", "ep": "8",
                                      "speculation": "mtp", "expert_load": "off"}
    assert declared_facts(deployed(write_matrix)) == {}


def test_auto_and_bf16_kv_caches_are_the_same_for_a_bf16_checkpoint(write_matrix: Callable[[str], Path]) -> None:
    server = deployed(write_matrix, declared={"precision": "bf16"})
    checks = compare(server, Revealed(facts={"weights": "bf16", "kv_cache": "bf16"}), ("qwen3-recall",), None)
    assert {c.fact: c.status for c in checks}["kv_cache"] == "agrees"
    fp8 = compare(server, Revealed(facts={"kv_cache": "fp8"}), ("qwen3-recall",), None)
    assert {c.fact: c.status for c in fp8}["kv_cache"] == "contradicts"


def test_a_stored_self_description_reads_back_or_reads_as_none(tmp_path: Path) -> None:
    said = SelfDescription(deployment="prod", base_url=BASE, runtime="vllm", reachable=True, model_ids=("q",),
                           checks=(Check(fact="tp", declared="2", observed=None, status="not verified"),))
    path = tmp_path / "prod.json"
    path.write_text(said.model_dump_json())
    assert read_self_description(path) == said
    assert read_self_description(tmp_path / "missing.json") is None
    path.write_text('{"deployment": "prod", "reachable": ')
    assert read_self_description(path) is None
    path.write_text('{"deployment": "prod"}')  # valid JSON, not a self-description
    assert read_self_description(path) is None


async def test_a_model_list_that_is_not_an_object_is_recorded_not_raised(write_matrix: Callable[[str], Path],
                                                                        serve: Serve) -> None:
    serve({"/v1/models": httpx.Response(200, json=["qwen3-recall"])})
    said = await describe(deployed(write_matrix, metrics="none"))
    assert not said.reachable and said.problem is not None
