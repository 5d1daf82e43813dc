"""Two launches started together: which groups pair, the second frozen until its turn and thawed for it, a failed or
cancelled start-up reaped, a round ordered to pair different engines, and the local executor pairing consecutive
groups (or not, when the matrix says so),
against tiny real processes and a stubbed ``run_group``."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from harness.config import load_matrix
from harness.errors import LaunchError
from harness.pipeline import GroupWork, start_ahead
from harness.pipeline import executors as executors_module
from harness.pipeline.executors import LocalRounds
from harness.pipeline.start_ahead import StartedAhead, interleaved, pairs, start_pair
from harness.plan import Plan, expand
from harness.result_records import CellResult
from harness.servers import LaunchSpec, ServerProcess, free_port
from harness.store import Store

MATRIX = """
name: pairs
models:
  m: {id: org/m}
  n: {id: org/n}
  o: {id: org/o}
workloads: {w: {kind: random, input_tokens: 8, output_tokens: 8}}
"""
"""Three launched servers of one cell each."""

SERVER = textwrap.dedent("""
    import http.server, subprocess, sys
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open(sys.argv[2], "w").write(str(child.pid))
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")
"""A server with a child process (as vLLM's engine core), answering /health at once."""


def state(pid: int) -> str:
    """The process's state letter from /proc (T: stopped; gone: no such process)."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return "gone"


async def settled(pids: Sequence[int], stopped: bool) -> tuple[str, ...]:
    """The processes' states once each is stopped (or no longer stopped): a signal takes effect when its process is
    next scheduled, which on a loaded machine is not at once (a state read right after SIGSTOP said R)."""
    for _ in range(500):
        states = tuple(state(pid) for pid in pids)
        if all((s == "T") == stopped for s in states):
            return states
        await asyncio.sleep(0.02)
    return tuple(state(pid) for pid in pids)


@pytest.fixture
def plan(write_matrix: Callable[[str], Path]) -> Plan:
    return expand(load_matrix(write_matrix(MATRIX)))


def work_of(plan: Plan) -> list[GroupWork]:
    return [GroupWork(group, group.cells, (), ()) for group in plan.groups]


def test_only_a_launched_single_process_group_pairs(write_matrix: Callable[[str], Path]) -> None:
    matrix = MATRIX + """axes: {runtime: [vllm], topology: [colocated, {replicas: 2}]}
deployments:
  there: {base_url: "http://127.0.0.1:9", model: m, served_model: m, runtime: openai}
"""
    groups = expand(load_matrix(write_matrix(matrix, "d.yaml"))).groups
    found = {(g.server.is_deployment, g.server.topology.kind): pairs(GroupWork(g, g.cells, (), ())) for g in groups}
    assert found == {(False, "colocated"): True, (False, "replicas"): False, (True, "colocated"): False}


@pytest.fixture
def tiny_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """``first_launch`` serving the tiny server above for each group (a group whose model is ``o`` crashes at
    start); returns where each group's child pid is written."""
    children: dict[str, Path] = {}

    def first_launch(work: GroupWork, store: Store, matrix: object, *, avoid: int | None = None,
                     ) -> tuple[ServerProcess, LaunchSpec]:
        port = free_port()
        while port == avoid:
            port = free_port()
        name = work.group.server.model_name
        children[name] = tmp_path / f"{name}.child"
        argv = (sys.executable, "-c", SERVER, str(port), str(children[name])) if name != "o" else \
            (sys.executable, "-c", "import sys; sys.exit('bad flag')")
        spec = LaunchSpec(argv=argv)
        return ServerProcess(spec, "127.0.0.1", port, tmp_path / f"{name}.log", 30), spec

    monkeypatch.setattr(start_ahead, "first_launch", first_launch)
    return children


async def test_the_second_waits_frozen_and_runs_thawed(plan: Plan, tmp_path: Path,
                                                       tiny_servers: dict[str, Path]) -> None:
    store = Store(tmp_path / "out", plan.matrix.name)
    first, second = await start_pair(*work_of(plan)[:2], store, plan.matrix)
    assert first.server.alive and second.server.alive and first.server.port != second.server.port
    leader = second.server._proc.pid  # type: ignore[union-attr]
    child = int(tiny_servers["n"].read_text())
    assert await settled([leader, child], stopped=True) == ("T", "T")  # the whole group frozen, its child too
    async with first.running() as srv:
        assert state(first.server._proc.pid) != "T"  # type: ignore[union-attr]
        async with httpx.AsyncClient() as client:
            assert (await client.get(srv.base_url + "/health")).status_code == 200
    async with second.running() as srv:
        assert not {"T", "gone"} & set(await settled([leader, child], stopped=False))
        async with httpx.AsyncClient() as client:
            assert (await client.get(srv.base_url + "/health")).status_code == 200
    assert not second.server.alive
    assert second.server._proc.returncode == -15  # type: ignore[union-attr]  # SIGTERM, acted on once thawed
    for _ in range(500):  # the group's SIGKILL acts when the child is next scheduled
        if state(child) in ("gone", "Z"):
            break
        await asyncio.sleep(0.02)
    assert state(child) in ("gone", "Z")


async def test_a_frozen_server_discarded_is_stopped_by_its_sigterm(plan: Plan, tmp_path: Path,
                                                                    tiny_servers: dict[str, Path]) -> None:
    store = Store(tmp_path / "out", plan.matrix.name)
    first, second = await start_pair(*work_of(plan)[:2], store, plan.matrix)
    assert second.server.paused
    for started in (second, first):
        await started.discard()
    assert not first.server.alive and not second.server.alive
    assert second.server._proc.returncode == -15  # type: ignore[union-attr]


async def test_a_failed_start_is_the_groups_launch_error_and_leaves_the_other_running(
        plan: Plan, tmp_path: Path, tiny_servers: dict[str, Path]) -> None:
    store = Store(tmp_path / "out", plan.matrix.name)
    second_and_third = work_of(plan)[1:]
    running, failed = await start_pair(*second_and_third, store, plan.matrix)
    assert running.server.alive and not running.server.paused and not failed.server.alive
    with pytest.raises(LaunchError, match="exited") as info:
        async with failed.running():
            pass
    assert "bad flag" in info.value.log_tail
    await running.discard()


async def test_a_cancelled_pair_leaves_no_process(plan: Plan, tmp_path: Path, tiny_servers: dict[str, Path],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path / "out", plan.matrix.name)
    started: list[StartedAhead] = []
    real_start = start_ahead.start

    def start(*args: object, **kwargs: object) -> StartedAhead:
        started.append(real_start(*args, **kwargs))  # type: ignore[arg-type]
        return started[-1]

    monkeypatch.setattr(start_ahead, "start", start)
    task = asyncio.ensure_future(start_pair(*work_of(plan)[:2], store, plan.matrix))
    while len(started) < 2 or not all(s.server._proc for s in started):
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not any(s.server.alive for s in started)


@pytest.mark.parametrize("together", [True, False])
async def test_local_rounds_pair_consecutive_groups(write_matrix: Callable[[str], Path], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch, together: bool) -> None:
    setting = f"executor: {{kind: local, start_ahead: {str(together).lower()}}}\n"
    plan = expand(load_matrix(write_matrix(MATRIX + setting)))
    work = work_of(plan)
    pairs_started: list[tuple[str, str]] = []
    handed: list[tuple[str, object]] = []

    async def fake_start_pair(this: GroupWork, following: GroupWork, store: Store, matrix: object,
                              ) -> tuple[object, object]:
        pairs_started.append((this.group.server.model_name, following.group.server.model_name))
        return f"ahead-{this.group.server.model_name}", f"ahead-{following.group.server.model_name}"

    async def run_group(item: GroupWork, store: Store, matrix: object, *, launch: int | None = None,
                        ahead: object = None) -> Sequence[CellResult]:
        handed.append((item.group.server.model_name, ahead))
        return []

    monkeypatch.setattr(executors_module, "start_pair", fake_start_pair)
    monkeypatch.setattr(executors_module, "run_group", run_group)
    await LocalRounds(plan, Store(tmp_path / "out", plan.matrix.name), "m.yaml").run_round(work, None)
    if together:  # m and n start together; o, with nobody after it, alone
        assert pairs_started == [("m", "n")]
        assert handed == [("m", "ahead-m"), ("n", "ahead-n"), ("o", None)]
    else:
        assert pairs_started == [] and handed == [("m", None), ("n", None), ("o", None)]


async def test_a_round_that_fails_stops_the_server_waiting_for_its_turn(
        write_matrix: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX + "executor: {kind: local, start_ahead: true}\n")))
    discarded: list[str] = []

    class Waiting:
        def __init__(self, name: str) -> None:
            self.name = name

        async def discard(self) -> None:
            discarded.append(self.name)

    async def fake_start_pair(this: GroupWork, following: GroupWork, store: Store, matrix: object,
                              ) -> tuple[object, object]:
        return Waiting(this.group.server.model_name), Waiting(following.group.server.model_name)

    async def run_group(item: GroupWork, store: Store, matrix: object, *, launch: int | None = None,
                        ahead: object = None) -> Sequence[CellResult]:
        raise RuntimeError("the store's disk is full")

    monkeypatch.setattr(executors_module, "start_pair", fake_start_pair)
    monkeypatch.setattr(executors_module, "run_group", run_group)
    with pytest.raises(RuntimeError):
        await LocalRounds(plan, Store(tmp_path / "out", plan.matrix.name), "m.yaml").run_round(work_of(plan), None)
    assert discarded == ["n"]


def test_a_round_is_taken_in_an_order_that_pairs_different_engines() -> None:
    def item(runtime: str, n: int) -> GroupWork:
        server = SimpleNamespace(runtime=runtime, label=f"{runtime}{n}")
        return GroupWork(SimpleNamespace(server=server), (), (), ())  # type: ignore[arg-type]

    plan_order = [item("vllm", 1), item("vllm", 2), item("vllm", 3), item("sglang", 1), item("sglang", 2),
                  item("vllm", 4), item("vllm", 5), item("sglang", 3)]
    ordered = [w.group.server.label for w in interleaved(plan_order)]
    assert ordered == ["vllm1", "sglang1", "vllm2", "sglang2", "vllm3", "sglang3", "vllm4", "vllm5"]
    assert interleaved(plan_order[:3]) == plan_order[:3]  # one engine: plan order
