"""A deployment's parts and router: every argv checked by the engine's own parser and the router's own parser."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.plan import ServerConfig, expand
from harness.servers import deployment_spec

VLLM = """
name: d
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 8, gpus_per_node: 16}
models: {m: {id: org/m}}
workloads: {w: {kind: random, input_tokens: 8, output_tokens: 8}}
axes: {parallel: [{tp: 8}], topology: [{replicas: 2}, {prefill: 1, decode: 1}, {prefill: 1, decode: 1,
       connector: ExampleConnector, policy: random}]}
"""


def servers(write_matrix: Callable[[str], Path], text: str) -> list[ServerConfig]:
    return [g.server for g in expand(load_matrix(write_matrix(text))).groups]


def spec(server: ServerConfig, tmp_path: Path):  # type: ignore[no-untyped-def]
    ports = itertools.count(9001)
    return deployment_spec(server, 9000, lambda: next(ports), tmp_path)


@pytest.fixture(scope="module")
def vllm_parser():  # type: ignore[no-untyped-def]
    argparse_utils = pytest.importorskip("vllm.utils.argparse_utils")
    cli_args = pytest.importorskip("vllm.entrypoints.launchers.cli_args")
    return cli_args.make_arg_parser(argparse_utils.FlexibleArgumentParser())


def test_replicas_behind_vllm_router(write_matrix: Callable[[str], Path], tmp_path: Path, vllm_parser) -> None:  # type: ignore[no-untyped-def]
    from vllm_router.launch_router import parse_router_args

    deployment = spec(servers(write_matrix, VLLM)[0], tmp_path)
    assert [p.name for p in deployment.parts] == ["replica0", "replica1"]
    ports = [vllm_parser.parse_args(list(p.spec.argv[3:])).port for p in deployment.parts]
    assert ports == [9001, 9002]
    router = parse_router_args(list(deployment.router.argv[3:]))
    assert router.worker_urls == ["http://127.0.0.1:9001", "http://127.0.0.1:9002"]
    assert (router.port, router.policy, router.host, router.prometheus_host) == (9000, "round_robin", "127.0.0.1",
                                                                                  "127.0.0.1")


def test_prefill_and_decode_with_vllm_kv_transfer(write_matrix: Callable[[str], Path], tmp_path: Path,
                                                  vllm_parser) -> None:  # type: ignore[no-untyped-def]
    from vllm.config.kv_transfer import KVTransferConfig
    from vllm_router.launch_router import parse_router_args

    for server, connector in zip(servers(write_matrix, VLLM)[1:], ("NixlConnector", "ExampleConnector"),
                                 strict=True):
        deployment = spec(server, tmp_path)
        roles = []
        for part in deployment.parts:
            parsed = vllm_parser.parse_args(list(part.spec.argv[3:]))
            config = parsed.kv_transfer_config
            assert isinstance(config, KVTransferConfig)  # vLLM's parser builds (and validates) its config
            assert config.kv_connector == connector
            roles.append(config.kv_role)
            if connector == "NixlConnector":  # one host: every instance its own side channel
                assert "VLLM_NIXL_SIDE_CHANNEL_PORT" in part.spec.env
            else:
                assert config.kv_connector_extra_config == {"shared_storage_path": str(tmp_path)}
        assert roles == ["kv_producer", "kv_consumer"]
        router = parse_router_args(list(deployment.router.argv[3:]))
        assert router.vllm_pd_disaggregation and router.prefill_urls == [("http://127.0.0.1:9001", None)]
        assert router.decode_urls == ["http://127.0.0.1:9003" if connector == "NixlConnector" else
                                      "http://127.0.0.1:9002"]


def test_sglang_prefill_and_decode_behind_sglang_router(write_matrix: Callable[[str], Path], tmp_path: Path) -> None:
    from sglang_router.launch_router import parse_router_args

    text = VLLM.replace("axes: {", "runtimes: {sglang: {python: /opt/sglang/bin/python}}\naxes: {runtime: [sglang], ")
    deployment = spec(servers(write_matrix, text)[1], tmp_path)
    prefill, decode = (list(p.spec.argv) for p in deployment.parts)
    assert prefill[prefill.index("--disaggregation-mode") + 1] == "prefill"
    assert decode[decode.index("--disaggregation-mode") + 1] == "decode"
    bootstrap = int(prefill[prefill.index("--disaggregation-bootstrap-port") + 1])
    router = parse_router_args(list(deployment.router.argv[3:]))
    assert router.pd_disaggregation and router.prefill_urls == [("http://127.0.0.1:9001", bootstrap)]
    assert router.decode_urls == ["http://127.0.0.1:9003"] and router.prometheus_host == "127.0.0.1"
