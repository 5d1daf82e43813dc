"""A runtime in a container: the docker argv around the engine's, and images pinned by digest only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.errors import ConfigError
from harness.plan import expand
from harness.servers.sglang import SglangRuntime
from harness.servers.vllm import VllmRuntime

DIGEST = "sha256:" + "0" * 64
MATRIX = """
name: c
hardware: {kind: gpu, gpu: H200, gpus_per_replica: 8}
models:
  q: {id: Qwen/Qwen3-30B-A3B, routed_experts: 128, num_nextn_predict_layers: 0, family: qwen3}
workloads:
  w: {kind: random, input_tokens: 16, output_tokens: 8}
axes:
  runtime: [sglang, vllm]
  parallel: [{tp: 8, ep: 8}]
runtimes:
"""


def test_docker_argv(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    text = MATRIX + (f"  sglang: {{image: 'lmsysorg/sglang:v0.5.23@{DIGEST}', env: {{SGLANG_X: '1'}},\n"
                     "           docker: {shm_size: 32g, model_cache: /data/hf}}\n"
                     f"  vllm: {{image: 'vllm/vllm-openai@{DIGEST}', docker: {{network: bridge}}}}\n")
    servers = {g.server.runtime: g.server for g in expand(load_matrix(write_matrix(text))).groups}
    local_model = tmp_path / "model"
    local_model.mkdir()
    sglang = list(SglangRuntime().launch_spec(servers["sglang"], str(local_model), 30001).argv)
    assert sglang[:3] == ["docker", "run", "--rm"]
    assert sglang[sglang.index("--gpus") + 1] == "all" and "--ipc=host" in sglang
    assert sglang[sglang.index("--network") + 1] == "host"
    assert "/data/hf:/root/.cache/huggingface" in sglang and f"{local_model}:{local_model}:ro" in sglang
    assert "SGLANG_X=1" in sglang and "HF_TOKEN" in sglang and sglang[sglang.index("--shm-size") + 1] == "32g"
    image = sglang.index(f"lmsysorg/sglang:v0.5.23@{DIGEST}")
    assert sglang[image - 2:image] == ["--entrypoint", "python3"]
    assert sglang[image + 1:image + 3] == ["-m", "sglang.launch_server"]
    assert sglang[sglang.index("--host") + 1] == "127.0.0.1"
    vllm = list(VllmRuntime().launch_spec(servers["vllm"], "Qwen/Qwen3-30B-A3B", 8001).argv)
    assert vllm[vllm.index("-p") + 1] == "127.0.0.1:8001:8001" and "--network" not in vllm
    assert vllm[vllm.index("--host") + 1] == "0.0.0.0"  # inside a bridged container: published on loopback only


@pytest.mark.parametrize("image", ["lmsysorg/sglang:v0.5.23", "lmsysorg/sglang:latest", "lmsysorg/sglang@sha256:abc"])
def test_unpinned_image_is_refused(write_matrix: Callable[..., Path], image: str) -> None:
    path = write_matrix(MATRIX + f"  sglang: {{image: '{image}'}}\n")
    with pytest.raises(ConfigError, match="not pinned by digest") as info:
        load_matrix(path)
    assert info.value.key == "runtimes.sglang" and str(path) in str(info.value)


def test_python_or_image_not_both(write_matrix: Callable[..., Path]) -> None:
    with pytest.raises(ConfigError, match="not both"):
        load_matrix(write_matrix(MATRIX + f"  sglang: {{python: /opt/p, image: 'x@{DIGEST}'}}\n"))


def test_docker_plumbing_stays_out_of_ids(write_matrix: Callable[..., Path]) -> None:
    base = MATRIX + f"  sglang: {{image: 'x@{DIGEST}'}}\n"
    other = MATRIX + f"  sglang: {{image: 'x@{DIGEST}', docker: {{network: bridge, shm_size: 8g}}}}\n"
    ids = [{c.cell_id for c in expand(load_matrix(write_matrix(t, f"{i}.yaml"))).cells}
           for i, t in enumerate((base, other))]
    assert ids[0] == ids[1]
