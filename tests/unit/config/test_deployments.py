"""The ``deployments:`` section: servers the harness did not launch, declared and reached at a base URL. What loads,
what is refused before anything is sent (each refusal a ConfigError naming the key), how deployments sit beside
launched servers in the plan, and which settings name a deployment's cells."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.config import load_matrix
from harness.errors import ConfigError
from harness.pipeline import load_plan
from harness.plan import ServerConfig, expand

MATRIX: dict[str, Any] = {
    "name": "t",
    "models": {"m": {"id": "fixture:tiny-qwen3-recall"}},
    "workloads": {"w": {"kind": "random", "input_tokens": 16, "output_tokens": 8, "num_requests": 4,
                        "warmup_requests": 1}},
    "axes": {"concurrency": [1, 2]},
}
PROD: dict[str, Any] = {"base_url": "http://10.0.0.5:8000", "model": "m", "served_model": "qwen3-recall"}

LAUNCHED_ID = "52a9c338b2d3"
"""The id of MATRIX's launched vLLM server (recall fixture, bf16, tp1, off), as computed by the commit before
deployments were added: a launched server must keep the id its stored cells were measured under."""

WriteMatrix = Callable[[str], Path]


def matrix_text(deployments: dict[str, dict[str, Any]] | None = None, **top: Any) -> str:
    """MATRIX with these deployments (``prod`` by default) and top-level keys replaced."""
    return yaml.safe_dump({**MATRIX, "deployments": {"prod": PROD} if deployments is None else deployments, **top},
                          sort_keys=False)


def prod(**changes: Any) -> dict[str, dict[str, Any]]:
    return {"prod": {**PROD, **changes}}


def refused(write_matrix: WriteMatrix, text: str) -> ConfigError:
    """The ConfigError the plan raises for ``text``; every one names the file and a fix."""
    path = write_matrix(text)
    with pytest.raises(ConfigError) as info:
        load_plan(path)
    assert str(path) in str(info.value) and "fix:" in str(info.value)
    return info.value


def deployment_server(write_matrix: WriteMatrix, **changes: Any) -> ServerConfig:
    (group,) = expand(load_matrix(write_matrix(matrix_text(prod(**changes))))).groups
    return group.server


def test_a_deployment_loads_with_its_declaration_and_cautious_defaults(write_matrix: WriteMatrix) -> None:
    text = matrix_text(prod(base_url="http://10.0.0.5:8000/serving/", runtime="vllm",
                            declared={"precision": "fp8", "parallel": {"tp": 2}}))
    matrix = load_matrix(write_matrix(text))
    deployment = matrix.deployments["prod"]
    assert deployment.base_url == "http://10.0.0.5:8000/serving"  # the client appends /v1/... to the root
    assert deployment.metrics_urls() == ("http://10.0.0.5:8000/serving",) and deployment.scheme == "http"
    assert (deployment.limits.max_concurrency, deployment.limits.max_requests) == (16, 5000)
    assert deployment.tls.verify and deployment.api_key_env is None and not deployment.profile
    assert deployment.declared.labels() == {"precision": "fp8", "parallel": "tp2"}
    assert deployment.declared_axes() == ("precision", "parallel")
    assert not matrix.launches_configurations()  # the deployments alone: no axes.runtime

    plan = load_plan(write_matrix(text))
    (group,) = plan.groups
    server = group.server
    assert server.is_deployment and server.deployment_name == "prod"
    assert (server.precision.label, server.parallel.tp, server.speculation.label) == ("fp8", 2, "off")
    assert server.label == "prod/m/vllm/fp8/tp2"
    assert [c.label for c in group.cells] == ["prod/m/vllm/fp8/tp2/w/c1", "prod/m/vllm/fp8/tp2/w/c2"]


def test_an_undeclared_recipe_is_the_defaults_and_stays_out_of_the_label(write_matrix: WriteMatrix) -> None:
    server = deployment_server(write_matrix)
    assert server.runtime == "openai" and server.label == "prod/m/openai"
    assert (server.precision.label, server.parallel.label, server.topology.is_colocated) == ("bf16", "tp1", True)


@pytest.mark.parametrize(("url", "says"), [
    ("ftp://10.0.0.5/", "not an http:// or https:// URL"),
    ("10.0.0.5:8000", "not an http:// or https:// URL"),
    ("http://admin:hunter2@10.0.0.5:8000", "credentials in the URL"),
    ("http://10.0.0.5:8000/v1", "ends in /v1"),
    ("https://gateway.example/team/v1/", "ends in /v1"),
    ("http://10.0.0.5:8000/?model=x", "no query or fragment"),
    ("http://10.0.0.5:8000/#top", "no query or fragment"),
])
def test_a_base_url_that_is_not_a_server_root_is_refused(write_matrix: WriteMatrix, url: str, says: str) -> None:
    err = refused(write_matrix, matrix_text(prod(base_url=url)))
    assert err.key == "deployments.prod.base_url" and says in err.problem
    assert "hunter2" not in str(err)  # a password in the URL is refused without being echoed


@pytest.mark.parametrize(("key", "value", "points_at"), [
    ("precision", "fp8", "declared.precision"),
    ("parallel", {"tp": 2}, "declared.parallel"),
    ("speculation", "ngram", "declared.speculation"),
    ("concurrency", [4], "axes.concurrency"),
    ("workload", ["w"], "axes.workload"),
])
def test_what_a_deployment_runs_or_is_driven_with_is_not_set_at_its_top_level(
        write_matrix: WriteMatrix, key: str, value: Any, points_at: str) -> None:
    err = refused(write_matrix, matrix_text(prod(**{key: value})))
    assert err.key == "deployments.prod"
    assert err.problem.startswith(f"{key}: a deployment's {key} is not set here") and points_at in err.problem


@pytest.mark.parametrize("name", ["1KEY", "MY-KEY", "$PROD_KEY", "sk-live-abc"])
def test_api_key_env_must_be_a_variable_name(write_matrix: WriteMatrix, name: str) -> None:
    err = refused(write_matrix, matrix_text(prod(api_key_env=name)))
    assert err.key == "deployments.prod.api_key_env"


def test_a_ca_bundle_with_verification_off_is_refused(write_matrix: WriteMatrix) -> None:
    text = matrix_text(prod(base_url="https://10.0.0.5", tls={"verify": False, "ca_bundle": "/etc/ca.pem"}))
    err = refused(write_matrix, text)
    assert err.key == "deployments.prod.tls" and "ca_bundle is set but verify is false" in err.problem


def test_a_deployment_of_an_undefined_model_is_refused(write_matrix: WriteMatrix) -> None:
    err = refused(write_matrix, matrix_text(prod(model="other")))
    assert "deployments.prod.model: 'other' is not defined; defined: m" in err.problem


@pytest.mark.parametrize("reference", ["prod", "staging"])
def test_parity_reference_must_name_another_deployment(write_matrix: WriteMatrix, reference: str) -> None:
    err = refused(write_matrix, matrix_text(prod(parity_reference=reference)))
    assert f"deployments.prod.parity_reference: {reference!r} is not another deployment" in err.problem


def test_parity_reference_to_another_deployment_loads(write_matrix: WriteMatrix) -> None:
    text = matrix_text({**prod(parity_reference="lab"), "lab": {**PROD, "base_url": "http://10.0.0.6:8000"}})
    assert load_matrix(write_matrix(text)).deployments["prod"].parity_reference == "lab"


@pytest.mark.parametrize("name", ["team/prod", "-prod", "prod env", "x" * 65])
def test_a_deployment_name_must_fit_labels_and_file_names(write_matrix: WriteMatrix, name: str) -> None:
    err = refused(write_matrix, matrix_text({name: PROD}))
    assert err.key == f"deployments.{name}" and "is not a valid name" in err.problem
    assert err.fix.startswith("rename it with letters, digits")


@pytest.mark.parametrize("axis", ["precision", "model"])
def test_recipe_axes_beside_deployments_need_axes_runtime(write_matrix: WriteMatrix, axis: str) -> None:
    axes = {**MATRIX["axes"], axis: ["int8"] if axis == "precision" else ["m"]}
    err = refused(write_matrix, matrix_text(axes=axes))
    assert err.problem.startswith(f"axes.{axis}: with deployments") and "axes.runtime" in err.problem


def test_naming_axes_runtime_launches_servers_beside_the_deployments(write_matrix: WriteMatrix) -> None:
    axes = {**MATRIX["axes"], "runtime": ["vllm"], "speculation": ["off", "ngram"]}
    plan = load_plan(write_matrix(matrix_text(axes=axes)))
    assert plan.matrix.launches_configurations()
    assert [g.server.is_deployment for g in plan.groups] == [True, False, False]
    assert [g.server.label for g in plan.groups] == ["prod/m/openai", "m/vllm/bf16/tp1/off", "m/vllm/bf16/tp1/ngram3"]
    assert all(g.server.deployment_name is None for g in plan.groups[1:])
    assert len(plan.cells) == 6  # every server at both concurrencies


def test_axes_deployment_picks_which_deployments_are_measured(write_matrix: WriteMatrix) -> None:
    both = {**prod(), "lab": {**PROD, "base_url": "http://10.0.0.6:8000"}}
    plan = load_plan(write_matrix(matrix_text(both, axes={**MATRIX["axes"], "deployment": ["lab"]})))
    assert [g.server.deployment_name for g in plan.groups] == ["lab"]
    assert {c.axis_value("deployment") for c in plan.cells} == {"lab"}
    every = load_plan(write_matrix(matrix_text(both)))
    assert [g.server.deployment_name for g in every.groups] == ["prod", "lab"]


def test_axes_deployment_must_name_a_deployment(write_matrix: WriteMatrix) -> None:
    err = refused(write_matrix, matrix_text(axes={**MATRIX["axes"], "deployment": ["lab"]}))
    assert "axes.deployment: 'lab' is not defined" in err.problem
    err = refused(write_matrix, yaml.safe_dump({**MATRIX, "axes": {**MATRIX["axes"], "deployment": ["prod"]}}))
    assert "axes.deployment" in err.problem  # a matrix without deployments


def test_a_concurrency_above_the_deployments_ceiling_is_refused_at_plan(write_matrix: WriteMatrix) -> None:
    path = write_matrix(matrix_text(prod(limits={"max_concurrency": 8}), axes={"concurrency": [1, 32]}))
    load_matrix(path)  # the matrix alone is valid: the ceiling is a property of the cells
    err = refused(write_matrix, path.read_text())
    assert err.key == "axes.concurrency"
    assert "32 requests in flight on deployment prod" in err.problem
    assert "deployments.prod.limits.max_concurrency (8)" in err.problem


def test_excluding_a_deployments_high_cells_keeps_them_for_launched_servers(write_matrix: WriteMatrix) -> None:
    text = matrix_text(axes={"concurrency": [1, 32], "runtime": ["vllm"]},
                       exclude=[{"deployment": "prod", "concurrency": 32}])
    plan = load_plan(write_matrix(text))
    by_server = {g.server.label: [c.concurrency for c in g.cells] for g in plan.groups}
    assert by_server == {"prod/m/openai": [1], "m/vllm/bf16/tp1/off": [1, 32]}


def test_an_slo_search_reaching_above_the_ceiling_is_refused(write_matrix: WriteMatrix) -> None:
    search = {"concurrency": [{"search": "slo", "max": 64}]}
    err = refused(write_matrix, matrix_text(axes=search, slo={"ttft_p99_ms": 500}))
    assert err.key == "axes.concurrency" and "64 requests in flight" in err.problem
    within = {"concurrency": [{"search": "slo", "max": 16}]}
    assert load_plan(write_matrix(matrix_text(axes=within, slo={"ttft_p99_ms": 500}))).searches


def test_how_a_deployment_is_reached_does_not_rename_its_cells(write_matrix: WriteMatrix) -> None:
    base = deployment_server(write_matrix).server_id
    reached: list[dict[str, Any]] = [
        {"base_url": "http://127.0.0.1:31337"},  # a port-forward's port changes every day
        {"base_url": "https://gateway.example", "tls": {"ca_bundle": "/etc/ca.pem"}},
        {"base_url": "https://gateway.example", "tls": {"verify": False}},
        {"limits": {"max_concurrency": 64, "max_requests": 100}},
        {"api_key_env": "PROD_KEY", "metrics": "none"},
    ]
    assert [deployment_server(write_matrix, **changes).server_id for changes in reached] == [base] * len(reached)


def test_what_a_deployment_serves_names_its_cells(write_matrix: WriteMatrix) -> None:
    base = deployment_server(write_matrix).server_id
    other_model = deployment_server(write_matrix, served_model="qwen3-recall-v2").server_id
    fp8 = deployment_server(write_matrix, declared={"precision": "fp8"}).server_id
    assert len({base, other_model, fp8}) == 3
    renamed = expand(load_matrix(write_matrix(matrix_text({"staging": PROD})))).groups[0].server.server_id
    assert renamed != base  # two deployments of the same recipe are two servers


def test_a_launched_servers_id_is_unchanged_by_deployments(write_matrix: WriteMatrix) -> None:
    launched = expand(load_matrix(write_matrix(yaml.safe_dump(MATRIX)))).groups[0].server
    assert launched.server_id == LAUNCHED_ID
    fields: dict[str, Any] = {name: getattr(launched, name) for name in ServerConfig.model_fields
              if name not in ("deployment_name", "deployment")}
    assert ServerConfig(**fields).server_id == ServerConfig(**fields, deployment_name=None,
                                                            deployment=None).server_id == LAUNCHED_ID
    beside = load_plan(write_matrix(matrix_text(axes={**MATRIX["axes"], "runtime": ["vllm"]})))
    assert beside.groups[1].server.server_id == LAUNCHED_ID  # a deployment beside it changes nothing either
