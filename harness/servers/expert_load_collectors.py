"""What an engine's adapter says about counting its experts' load: the flags and environment that turn its collector
on, and the HTTP calls that reset and read it.

Two collectors, each checked against one engine version (``tests/contract`` reads that engine's source for every name
used): vLLM's is the project's own worker extension (``engines/vllm_expert_load``), which hooks each MoE layer's router
where vLLM's routed-experts capturer does and is reached through vLLM's dev-mode ``/collective_rpc``; SGLang's is its
built-in expert distribution recorder, started, stopped and dumped over HTTP, its dump a torch file in a directory
the harness names, and clocked by the project's general plugin of SGLang (``engines/sglang_expert_load``). Both give
logical counts per MoE layer and expert (before any EPLB remapping), of the tokens the engine computed: prompt tokens
served from a prefix or radix cache are not routed, and a speculative cell's verify steps route the draft positions
they check. The stage that drives them is ``harness.telemetry.expert_load_watch``.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import httpx
from pydantic import BaseModel, ConfigDict

from harness.errors import ConfigError, ServerLost
from harness.plan.cells import ServerConfig

ENGINES_DIR = Path(__file__).resolve().parents[2] / "engines"
VLLM_EXTENSION_DIR = ENGINES_DIR / "vllm_expert_load"
SGLANG_PLUGIN_DIR = ENGINES_DIR / "sglang_expert_load"
"""SGLang's general plugin that clocks its recorder (``harness_sglang_expert_load``), found on the server's path."""
VLLM_EXTENSION = "harness_vllm_expert_load.ExpertLoadWorker"
VLLM_EXTENSION_VERSION = "0.32.0"
"""The vLLM release the worker extension's hooks were checked against."""
SGLANG_RECORDER_VERSION = "0.5.23"
"""The SGLang release whose recorder routes, flags and dump format were checked."""


class ExpertCounts(BaseModel):
    """Tokens routed to each expert of each MoE layer over one interval, pooled over the engine's ranks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    collector: str
    """Which collector counted, with the engine version it was checked against."""
    layers: tuple[int, ...]
    """The model's layer index of each counted MoE layer (a layer the collector could not hook is absent)."""
    experts: int
    top_k: int | None
    counts: tuple[tuple[int, ...], ...]
    """``counts[i][e]``: rows routed to expert ``e`` of layer ``layers[i]`` (each row picks ``top_k`` experts)."""
    rows: tuple[int, ...]
    """Rows (tokens) routed through each layer: what its counts sum to, divided by ``top_k``."""
    hook_seconds: float | None = None
    """Time spent inside the collector's own hook (vLLM: on the worker; SGLang: its recorder in the scheduler, by the
    project's plugin; None where nothing timed it)."""
    ranks: int = 1


class LoggedBalance(BaseModel):
    """What an engine's expert-parallel load balancer logs about its own balance over a cell: per EP rank (summed
    over the MoE layers), not per expert, and only where expert parallelism and its logging are on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    steps: int
    """Logged steps in the cell's log."""
    balancedness: float
    """Mean over ranks over max over ranks, of the tokens summed over every logged step (1.0: even ranks)."""
    worst: float
    """The lowest balancedness of one logged step."""


class EngineExpertLoad(ABC):
    """Server flags, server environment and the reset/read calls of one engine's expert-load collector."""

    def logged_balance(self, log: str) -> LoggedBalance | None:
        """The engine's own balance log over a cell (its server log while the cell ran); None where it logged
        none."""
        return None

    def check(self, server: ServerConfig, source: str) -> None:
        """Raise ConfigError when the collector cannot run on ``server`` (before anything launches); most can
        run wherever their engine does."""
        return None

    @abstractmethod
    def server_args(self) -> list[str]:
        """Flags appended to the server's argv at launch."""

    @abstractmethod
    def server_env(self, port: int) -> dict[str, str]:
        """Extra environment for the server process that listens on ``port``."""

    @abstractmethod
    async def reset(self, client: httpx.AsyncClient, base_urls: Sequence[str]) -> None:
        """Zero the counts on every server of ``base_urls`` (a deployment has several)."""

    @abstractmethod
    async def read(self, client: httpx.AsyncClient, base_urls: Sequence[str], top_k: int | None,
                   dump_dir: Path | None = None) -> ExpertCounts:
        """The counts since the last reset, summed over ``base_urls`` (``top_k``: the model's experts per token,
        from its config, for an engine that does not say)."""


async def _post(client: httpx.AsyncClient, url: str, body: dict[str, object] | None = None) -> httpx.Response:
    try:
        response = await client.post(url, json=body, timeout=60)
    except httpx.TransportError as exc:
        raise ServerLost(f"{url}: {exc}") from exc
    response.raise_for_status()
    return response


class VllmExpertLoad(EngineExpertLoad):
    """The project's worker extension, called through ``POST /collective_rpc`` (vLLM's dev mode)."""

    def logged_balance(self, log: str) -> LoggedBalance | None:
        return vllm_logged_balance(log)

    def check(self, server: ServerConfig, source: str) -> None:
        if server.runtime_env.image:
            raise ConfigError(source, "telemetry.expert_load",
                              f"{server.label}: vLLM's expert-load collector is a module of this checkout "
                              "(engines/vllm_expert_load), which a container image does not hold",
                              "set telemetry.expert_load: false, or run vLLM from a local environment")
        if "--worker-extension-cls" in server.runtime_env.extra_args:
            raise ConfigError(source, "telemetry.expert_load",
                              f"{server.label}: vLLM takes one --worker-extension-cls, and "
                              f"runtimes.{server.runtime}.extra_args names one already",
                              f"drop it from runtimes.{server.runtime}.extra_args, or set telemetry.expert_load: "
                              "false")

    def server_args(self) -> list[str]:
        return ["--worker-extension-cls", VLLM_EXTENSION]

    def server_env(self, port: int) -> dict[str, str]:
        path = os.pathsep.join(p for p in (str(VLLM_EXTENSION_DIR), os.environ.get("PYTHONPATH", "")) if p)
        return {"VLLM_SERVER_DEV_MODE": "1", "PYTHONPATH": path}

    async def reset(self, client: httpx.AsyncClient, base_urls: Sequence[str]) -> None:
        for url in base_urls:
            await _post(client, f"{url}/collective_rpc", {"method": "expert_load_reset"})

    async def read(self, client: httpx.AsyncClient, base_urls: Sequence[str], top_k: int | None,
                   dump_dir: Path | None = None) -> ExpertCounts:
        answers: list[RankCounts] = []
        for url in base_urls:
            reply = await _post(client, f"{url}/collective_rpc", {"method": "expert_load_read"})
            answers += [RankCounts.model_validate(a) for a in reply.json()["results"]]
        # TP ranks route the same rows: one rank of each tensor-parallel group counts; DP ranks (and replicas) add up
        kept = [a for a in answers if a.tp_rank == 0]
        return pooled(f"vLLM worker hook (checked on vLLM {VLLM_EXTENSION_VERSION})", kept)


EPLB_STEP = re.compile(r"EPLB step: \d+ for model \S+: avg_tokens=(?P<avg>[\d.]+), max_tokens=(?P<max>\d+), "
                       r"balancedness=(?P<balancedness>[\d.]+)")
"""The line vLLM's EPLB logs at every step with ``--eplb-config '{"log_balancedness": true}'`` (vLLM 0.32,
``distributed/eplb/eplb_state.py``): average and maximum tokens over EP ranks, summed over the MoE layers."""


def vllm_logged_balance(log: str) -> LoggedBalance | None:
    """vLLM's EPLB balancedness over the logged steps of a cell (GPU expert parallelism only: on this CPU vLLM
    refuses --enable-eplb)."""
    steps = [(float(m["avg"]), float(m["max"]), float(m["balancedness"])) for m in EPLB_STEP.finditer(log)]
    if not steps:
        return None
    total_max = sum(step[1] for step in steps)
    return LoggedBalance(source=f"vLLM EPLB log (log_balancedness, checked on vLLM {VLLM_EXTENSION_VERSION})",
                         steps=len(steps), balancedness=sum(step[0] for step in steps) / total_max if total_max else 0,
                         worst=min(step[2] for step in steps))


class SglangExpertLoad(EngineExpertLoad):
    """SGLang's expert distribution recorder in ``stat`` mode with an unbounded buffer (its default keeps only the
    last 1,000 forward passes), dumped to a torch file per server; the project's general plugin of SGLang, on the
    server's path, clocks the recorder and writes its time into the dump."""

    def server_args(self) -> list[str]:
        return ["--expert-distribution-recorder-mode", "stat", "--expert-distribution-recorder-buffer-size", "-1"]

    def server_env(self, port: int) -> dict[str, str]:
        path = os.pathsep.join(p for p in (str(SGLANG_PLUGIN_DIR), os.environ.get("PYTHONPATH", "")) if p)
        return {"SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR": str(sglang_dump_dir(port)),
                "HARNESS_EXPERT_LOAD_TIMING": "1", "PYTHONPATH": path}

    async def reset(self, client: httpx.AsyncClient, base_urls: Sequence[str]) -> None:
        for url in base_urls:  # starting clears what an earlier recording held
            await _post(client, f"{url}/start_expert_distribution_record")

    async def read(self, client: httpx.AsyncClient, base_urls: Sequence[str], top_k: int | None,
                   dump_dir: Path | None = None) -> ExpertCounts:
        """Each server's dump, from the directory the harness gave it at launch, or from a deployment's
        ``dump_dir`` (its server's directory as this machine sees it: only the dump this read asked for is read,
        and nothing there is deleted, as the directory is not the harness's)."""
        if dump_dir is not None:
            return pooled(f"SGLang expert distribution recorder (checked on SGLang {SGLANG_RECORDER_VERSION})",
                          [await _dump_into(client, url, dump_dir, top_k) for url in base_urls])
        answers = []
        for url in base_urls:
            dump_dir = sglang_dump_dir(httpx.URL(url).port or 80)
            shutil.rmtree(dump_dir, ignore_errors=True)  # a dump an earlier, failed read left
            try:
                await _post(client, f"{url}/stop_expert_distribution_record")
                await _post(client, f"{url}/dump_expert_distribution_record")  # answers once the file is written
                dumps = sorted(dump_dir.glob("*.pt"))
                if len(dumps) != 1:
                    raise ServerLost(f"{url}: expected one expert distribution dump in {dump_dir}, found "
                                     f"{len(dumps)}")
                answers.append(sglang_dump(dumps[0], top_k))
            finally:
                shutil.rmtree(dump_dir, ignore_errors=True)
        return pooled(f"SGLang expert distribution recorder (checked on SGLang {SGLANG_RECORDER_VERSION})", answers)


async def _dump_into(client: httpx.AsyncClient, url: str, dump_dir: Path, top_k: int | None) -> RankCounts:
    """Stop and dump a deployment's recorder; the one new dump in ``dump_dir`` is its answer."""
    before = set(dump_dir.glob("*.pt"))
    await _post(client, f"{url}/stop_expert_distribution_record")
    await _post(client, f"{url}/dump_expert_distribution_record")  # answers once the file is written
    new = sorted(set(dump_dir.glob("*.pt")) - before)
    if len(new) != 1:
        raise ServerLost(f"{url}: expected one new expert distribution dump in {dump_dir}, found {len(new)} (is it "
                         "the directory the server writes, SGLANG_EXPERT_DISTRIBUTION_RECORDER_DIR?)")
    return sglang_dump(new[0], top_k)


def sglang_dump_dir(port: int) -> Path:
    """Where the SGLang server on ``port`` writes its recorder's dumps: a directory of this machine's temporary
    space, named by the port (unique while the server lives), emptied and removed by each read."""
    return Path(tempfile.gettempdir()) / f"harness-expert-load-{port}"


class RankCounts(BaseModel):
    """One rank's (or one server's) answer, as the vLLM extension writes it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    layers: tuple[int, ...]
    experts: int
    top_k: int | None = None
    counts: tuple[tuple[int, ...], ...]
    rows: tuple[int, ...]
    hook_seconds: float | None = None
    tp_rank: int = 0


def sglang_dump(path: Path, top_k: int | None) -> RankCounts:
    """One recorder dump: ``logical_count`` is ``[forward passes, layers, experts]``; layers that route nothing (a
    DeepSeek model's leading dense layers) are left out. ``harness_hook_seconds`` is the plugin's clock (absent where
    the plugin did not load: an SGLang that does not find it, or ``SGLANG_PLUGINS`` naming others only)."""
    import torch  # the engine's dependency, in the harness's environment with vLLM's CPU build

    data = torch.load(path, map_location="cpu", weights_only=True)
    per_layer = data["logical_count"].sum(dim=0).to(torch.int64)
    layers = tuple(i for i in range(per_layer.shape[0]) if int(per_layer[i].sum()) > 0)
    counts = tuple(tuple(int(v) for v in per_layer[i].tolist()) for i in layers)
    rows = tuple(sum(c) // top_k if top_k else sum(c) for c in counts)
    seconds = data.get("harness_hook_seconds")
    return RankCounts(layers=layers, experts=int(per_layer.shape[1]), top_k=top_k, counts=counts, rows=rows,
                      hook_seconds=None if seconds is None else float(seconds))


def pooled(collector: str, answers: Sequence[RankCounts]) -> ExpertCounts:
    """Several ranks' (or servers') answers added up, layer by layer."""
    if not answers:
        raise ServerLost("no rank answered the expert-load read")
    layers = answers[0].layers
    counts = [[0] * answers[0].experts for _ in layers]
    rows = [0] * len(layers)
    for answer in answers:
        by_layer = dict(zip(answer.layers, zip(answer.counts, answer.rows, strict=True), strict=True))
        for i, layer in enumerate(layers):
            layer_counts, layer_rows = by_layer.get(layer, ((0,) * len(counts[i]), 0))
            counts[i] = [a + b for a, b in zip(counts[i], layer_counts, strict=True)]
            rows[i] += layer_rows
    hooks = [a.hook_seconds for a in answers]
    return ExpertCounts(collector=collector, layers=layers, experts=answers[0].experts, top_k=answers[0].top_k,
                        counts=tuple(tuple(c) for c in counts), rows=tuple(rows),
                        hook_seconds=None if None in hooks else sum(h for h in hooks if h is not None),
                        ranks=len(answers))
