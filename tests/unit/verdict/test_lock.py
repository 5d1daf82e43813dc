"""The lock: the machine it ran on, model hashes, server commands from the logs, and drift."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.errors import HarnessError
from harness.plan import Plan, expand
from harness.store import Store
from harness.verdict import lock as lockfile
from harness.verdict.lock import build_lock, drift, model_info, read_lock, write_lock


def _model_dir(root: Path) -> Path:
    root.mkdir()
    (root / "config.json").write_text('{"model_type": "qwen3_moe"}')
    (root / "tokenizer.json").write_text('{"model": {}}')
    (root / "model.safetensors").write_bytes(b"\x00" * 64)
    return root

# The lock records the machine: each test runs as an AMD and as an Intel host (tests/conftest.py: host).
pytestmark = pytest.mark.usefixtures("host")


def test_model_hashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _model_dir(tmp_path / "m")
    info = model_info("local", None, str(folder))
    assert info.local and info.config_sha256 and list(info.weights_sha256) == ["model.safetensors"]
    before = info.tokenizer_sha256
    (folder / "tokenizer.json").write_text('{"model": {"vocab": 1}}')
    assert model_info("local", None, str(folder)).tokenizer_sha256 != before
    monkeypatch.setattr(lockfile, "HASH_WEIGHTS_MAX_BYTES", 10)
    big = model_info("local", None, str(folder))
    assert big.weights_sha256 == {} and "not hashed" in (big.note or "")
    remote = model_info("deepseek-ai/DeepSeek-V3.1", None, "deepseek-ai/DeepSeek-V3.1")
    assert not remote.local and "no revision pinned" in (remote.note or "")


def _fake_plan(write_matrix: Callable[..., Path], model: Path, seed: int = 0) -> Plan:
    return expand(load_matrix(write_matrix(f"""
name: fake
models: {{m: {{id: "{model}"}}}}
workloads: {{w: {{kind: random, input_tokens: 16, output_tokens: 8, seed: {seed}}}}}
axes: {{runtime: [fake], speculation: ["off", mtp]}}
""")))


def test_lock_records_commands_and_drift(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = _fake_plan(write_matrix, _model_dir(tmp_path / "model"))
    store = Store(tmp_path / "reports", "fake")
    off, mtp = plan.groups
    log = store.server_log(off.server.server_id)
    log.parent.mkdir(parents=True)
    log.write_text(f"$ {sys.executable} -m harness_testing.fake_engine --host 127.0.0.1 --port 41234 --seed 0\nready\n")
    lock = build_lock(plan, store)
    assert lock.matrix == "fake" and lock.seeds == {"server.seed": 0, "workloads.w.seed": 0}
    logged = lock.servers[off.server.server_id]
    assert logged.command_source == "log" and "--port <port>" in logged.command and "41234" not in logged.command
    planned = lock.servers[mtp.server.server_id]
    assert planned.command_source == "planned" and "--speculative-k 1" in planned.command
    assert lock.engines["fake"].package == "harness" and lock.engines["fake"].package_version
    assert lock.harness.version and lock.hardware.count >= 1
    (model,) = lock.models.values()
    assert model.local and model.weights_sha256

    path = write_lock(lock, tmp_path / "lock" / "fake.lock.json")
    again = build_lock(plan, store)
    committed = read_lock(path)
    assert committed is not None and drift(committed, again) == []
    changed = _fake_plan(write_matrix, tmp_path / "model", seed=7)
    moved = {d.field for d in drift(lock, build_lock(changed, store))}
    assert {"matrix_sha256", "seeds.workloads.w.seed"} <= moved
    renamed = lock.model_copy(update={"engines": {"fake": lock.engines["fake"].model_copy(
        update={"package_version": "0.0.1"})}})
    (d,) = drift(renamed, again)
    assert d.field == "engines.fake.package_version" and d.locked == "0.0.1"


def test_unreadable_lock(tmp_path: Path) -> None:
    assert read_lock(tmp_path / "none.json") is None
    (tmp_path / "bad.json").write_text('{"matrix": 1}')
    with pytest.raises(HarnessError, match="not a lock file"):
        read_lock(tmp_path / "bad.json")


@pytest.mark.parametrize("line", [
    "INFO 11-21 09:00:01 [api_utils.py:327] vLLM server version 0.32.0, serving model /m",
    " \x1b[93m▄▄\x1b[0m \x1b[94m▄█\x1b[0m \x1b[1m█     █     █ ▀▄▀ █\x1b[0m  version \x1b[1m0.32.0\x1b[0m",
    "INFO vLLM API server version 0.32.0",
])
def test_server_version_from_the_log(tmp_path: Path, line: str) -> None:
    log = tmp_path / "server.log"
    log.write_text(f"$ python -m vllm.entrypoints.openai.api_server --port 1\n{line}\n")
    assert lockfile.server_version("vllm", log) == "0.32.0"
    assert lockfile.server_version("fake", log) is None


def test_a_drafter_is_locked_with_its_hashes(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    target, drafter = _model_dir(tmp_path / "target"), _model_dir(tmp_path / "drafter")
    plan = expand(load_matrix(write_matrix(f"""
name: fake
models: {{m: {{id: "{target}"}}}}
workloads: {{w: {{kind: random, input_tokens: 16, output_tokens: 8}}}}
axes: {{runtime: [fake], speculation: [{{method: draft_model, k: 2, draft_model: "{drafter}"}}]}}
""")))
    lock = build_lock(plan, Store(tmp_path / "reports", "fake"))
    assert set(lock.models) == {str(target), str(drafter)}
    assert lock.models[str(drafter)].local and lock.models[str(drafter)].weights_sha256
