"""The cross-check's orchestration with a stand-in for vLLM's client (the real one is slow to import; its flags
are checked against its own parser in tests/integration/test_crosscheck_vllm.py)."""

from __future__ import annotations

import asyncio
import json
import stat
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from harness.config import RandomWorkload, load_matrix
from harness.crosscheck import CrosscheckError, crosscheck, pick_cell
from harness.crosscheck_peers import PeerNotInstalled, peer_client
from harness.crosscheck_result import CrosscheckSpec, format_result
from harness.errors import ConfigError
from harness.plan import expand
from harness.servers.prometheus import MetricsSnapshot, parse_exposition
from harness.servers.vllm import VLLM_METRICS
from harness_testing.loopback import LoopbackConfig, LoopbackServer

from tests.support.matrices import BASE_MATRIX
from tests.support.peer_runs import DATA

STUB = """#!{python}
import json, pathlib, sys
args = sys.argv[3:]  # after "-c CODE"
flags = {{a: (b if not b.startswith("--") else True) for a, b in zip(args, args[1:] + ["--"]) if a.startswith("--")}}
log = pathlib.Path({log!r})
log.write_text(log.read_text() + json.dumps(args) + "\\n" if log.exists() else json.dumps(args) + "\\n")
if {fail}:
    print("boom"); sys.exit(3)
out = pathlib.Path(flags["--result-dir"]) / flags["--result-filename"]
out.write_text(json.dumps({{"median_ttft_ms": 2.0, "median_tpot_ms": 1.0, "mean_itl_ms": 1.0, "mean_ttft_ms": 3.0,
                            "output_throughput": 100.0, "completed": 8, "failed": 0}}))
"""


def _stub(tmp_path: Path, fail: bool = False) -> tuple[str, Path]:
    script, log = tmp_path / "vllm-stub", tmp_path / "calls.jsonl"
    script.write_text(STUB.format(python=sys.executable, log=str(log), fail=fail))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script), log


def _flags(args: list[str]) -> dict[str, str | bool]:
    pairs = zip(args, [*args[1:], "--"], strict=True)
    return {a: (b if not b.startswith("--") else True) for a, b in pairs if a.startswith("--")}


def _spec(url: str, tokenizer_dir: Path, python: str, rounds: int = 2) -> CrosscheckSpec:
    workload = RandomWorkload(input_tokens=8, output_tokens=5, range_ratio=0.2, num_requests=8, warmup_requests=1,
                              seed=4)
    return CrosscheckSpec(base_url=url, model="m", tokenizer_dir=tokenizer_dir, workload=workload, concurrency=2,
                          rounds=rounds, vllm_python=python, server_metrics=VLLM_METRICS)


async def test_interleaved_rounds_and_ratios(tmp_path: Path, tiny_tokenizer_dir: Path) -> None:
    python, log = _stub(tmp_path)
    async with LoopbackServer(LoopbackConfig(ttft_ms=2, itl_ms=1)).serve() as url:
        result = await crosscheck(_spec(url, tiny_tokenizer_dir, python))
    assert [(r.client, r.round) for r in result.rounds] == [("ours", 0), ("vllm", 0), ("vllm", 1), ("ours", 1)]
    ours = [r for r in result.rounds if r.client == "ours"]
    assert all(r.completed == 8 and r.failed == 0 and r.median_ttft_ms >= 2.0 for r in ours)
    ratios = result.ratios()
    assert ratios["median_ttft_ms"] == pytest.approx(result.median("ours", "median_ttft_ms") / 2.0)
    assert ratios["output_throughput"] == pytest.approx(result.median("ours", "output_throughput") / 100.0)
    calls = [_flags(json.loads(line)) for line in log.read_text().splitlines()]
    assert [c["--seed"] for c in calls] == ["1004", "2004"]  # a fresh seed per round: no shared prefix cache
    flags = calls[0]
    assert (flags["--random-input-len"], flags["--random-output-len"], flags["--random-range-ratio"]) == ("8", "5",
                                                                                                          "0.2")
    assert (flags["--num-prompts"], flags["--max-concurrency"], flags["--base-url"]) == ("8", "2", url)
    text = format_result(result, 0.05)
    assert "ratio ours/vLLM" in text and "definitional differences" in text
    assert json.loads(result.to_json())["ratios"] == pytest.approx(ratios)


def _histograms(seen: int) -> str:
    """vLLM's TTFT and ITL histograms after ``seen`` runs, each run adding 10 TTFTs of 1.5 ms and 40 ITLs of 0.5 ms."""
    lines = []
    for name, count, each in (("vllm:time_to_first_token_seconds", 10, 0.0015),
                              ("vllm:inter_token_latency_seconds", 40, 0.0005)):
        lines += [f"# TYPE {name} histogram", f'{name}_bucket{{le="+Inf"}} {seen * count}',
                  f"{name}_count {seen * count}", f"{name}_sum {seen * count * each}"]
    return "\n".join(lines) + "\n"


async def test_each_client_is_anchored_to_the_servers_view_of_its_own_runs(
        tmp_path: Path, tiny_tokenizer_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scrapes = iter(range(100))

    async def scrape(base_url: str) -> MetricsSnapshot:
        # two scrapes per run: before (k runs seen) and after (k + 1)
        return parse_exposition(_histograms((next(scrapes) + 1) // 2))

    monkeypatch.setattr("harness.crosscheck.scrape", scrape)
    python, _ = _stub(tmp_path)
    async with LoopbackServer(LoopbackConfig(ttft_ms=2, itl_ms=1)).serve() as url:
        result = await crosscheck(_spec(url, tiny_tokenizer_dir, python))
    assert all(r.server_mean_itl_ms == pytest.approx(0.5) and r.server_mean_ttft_ms == pytest.approx(1.5)
               for r in result.rounds)
    assert result.anchors("vllm") == pytest.approx({"mean_itl_ms": 2.0, "mean_ttft_ms": 2.0})
    ours = result.anchors("ours")
    assert ours["mean_itl_ms"] == pytest.approx(result.median("ours", "mean_itl_ms") / 0.5)
    assert result.anchored_ratios()["mean_itl_ms"] == pytest.approx(ours["mean_itl_ms"] / 2.0)
    assert "the server's drift divided out" in format_result(result, 0.05)
    assert json.loads(result.to_json())["anchored_ratios"] == pytest.approx(result.anchored_ratios())


async def test_without_server_histograms_no_anchored_ratio_is_claimed(tmp_path: Path,
                                                                      tiny_tokenizer_dir: Path) -> None:
    python, _ = _stub(tmp_path)
    async with LoopbackServer(LoopbackConfig(ttft_ms=2, itl_ms=1)).serve() as url:  # no /metrics
        result = await crosscheck(_spec(url, tiny_tokenizer_dir, python))
    assert result.anchored_ratios() == {} and "drift divided out" not in format_result(result, 0.05)


async def test_a_failing_vllm_client_is_a_harness_error(tmp_path: Path, tiny_tokenizer_dir: Path) -> None:
    python, _ = _stub(tmp_path, fail=True)
    async with LoopbackServer().serve() as url:
        with pytest.raises(CrosscheckError, match="exited 3"):
            await crosscheck(_spec(url, tiny_tokenizer_dir, python, rounds=1))


def test_vllm_argv_mirrors_the_workload(tiny_tokenizer_dir: Path, tmp_path: Path) -> None:
    argv = peer_client("vllm").argv(_spec("http://h:1", tiny_tokenizer_dir, "py"), 0, tmp_path)
    assert argv[:2] == ["py", "-c"] and "from vllm.benchmarks.serve import add_cli_args, main" in argv[2]
    for flag in ("--ignore-eos", "--disable-tqdm", "--save-result"):
        assert flag in argv


def test_pick_cell(write_matrix: Callable[[str], Path]) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX)))
    cell = pick_cell(plan, concurrency=16, num_requests=64)
    assert cell.concurrency == 16 and cell.workload.num_requests == 64 and cell.workload_name == "w"
    assert pick_cell(plan, server="vllm/bf16").server.model_name == "m"
    with pytest.raises(ConfigError, match="no cell matches"):
        pick_cell(plan, server="sglang")


GUIDELLM_STUB = """#!{python}
import pathlib, shutil, sys
out = next(a for a in sys.argv[1:] if a.startswith("kind=json,path=")).removeprefix("kind=json,path=")
shutil.copy({stored!r}, out)
"""


async def test_a_peer_from_its_own_environment_interleaves_like_vllms(
        tmp_path: Path, tiny_tokenizer_dir: Path) -> None:
    """``--client guidellm``: its console script under peers_dir/guidellm/bin (a stand-in here, handing back the
    stored output of a real run), its figures read by its entry, its title and notes in the result."""
    script = tmp_path / "peers" / "guidellm" / "bin" / "guidellm"
    script.parent.mkdir(parents=True)
    script.write_text(GUIDELLM_STUB.format(python=sys.executable, stored=str(DATA / "guidellm" / "benchmarks.json")))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    spec = replace(_spec("", tiny_tokenizer_dir, "unused"), client="guidellm", peers_dir=tmp_path / "peers")
    async with LoopbackServer(LoopbackConfig(ttft_ms=2, itl_ms=1)).serve() as url:
        result = await crosscheck(replace(spec, base_url=url))
    assert [(r.client, r.round) for r in result.rounds] == [("ours", 0), ("guidellm", 0), ("guidellm", 1),
                                                            ("ours", 1)]
    assert result.median("guidellm", "output_throughput") == pytest.approx(293.6, abs=0.05)
    assert result.ratios()["median_ttft_ms"] == pytest.approx(result.median("ours", "median_ttft_ms") / 21.48,
                                                              rel=1e-3)
    text = format_result(result, 0.05)
    assert "ratio ours/GuideLLM" in text and "GuideLLM's TPOT includes the first token" in text


LEAVING_STUB = """#!{python}
import pathlib, shutil, subprocess, sys
# a worker of its own that would outlive it, as a peer's worker processes could
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
pathlib.Path({pid_file!r}).write_text(str(worker.pid))
out = next(a for a in sys.argv[1:] if a.startswith("kind=json,path=")).removeprefix("kind=json,path=")
shutil.copy({stored!r}, out)
"""


async def test_a_peers_worker_processes_end_with_its_round(tmp_path: Path, tiny_tokenizer_dir: Path) -> None:
    script, pid_file = tmp_path / "peers" / "guidellm" / "bin" / "guidellm", tmp_path / "worker.pid"
    script.parent.mkdir(parents=True)
    script.write_text(LEAVING_STUB.format(python=sys.executable, pid_file=str(pid_file),
                                          stored=str(DATA / "guidellm" / "benchmarks.json")))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    spec = replace(_spec("", tiny_tokenizer_dir, "unused", rounds=1), client="guidellm", peers_dir=tmp_path / "peers")
    async with LoopbackServer(LoopbackConfig(ttft_ms=2, itl_ms=1)).serve() as url:
        await crosscheck(replace(spec, base_url=url))
    assert await ended(int(pid_file.read_text()))


async def ended(pid: int) -> bool:
    """Whether the process is gone (or a zombie until its parent reaps it) once its SIGKILL took effect: a signal acts
    when its process is next scheduled, so a state read at once on a loaded machine can still say R."""
    stat_file = Path(f"/proc/{pid}/stat")
    for _ in range(500):
        try:
            if stat_file.read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        await asyncio.sleep(0.02)
    return False


async def test_a_peer_not_installed_is_refused_before_any_request(tmp_path: Path, tiny_tokenizer_dir: Path) -> None:
    spec = replace(_spec("http://127.0.0.1:1", tiny_tokenizer_dir, "unused"), client="aiperf",
                   peers_dir=tmp_path / "nothing")
    with pytest.raises(PeerNotInstalled, match="make peers"):
        await crosscheck(spec)  # no server at that address: the refusal comes first
