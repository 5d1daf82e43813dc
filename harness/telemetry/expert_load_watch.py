"""The expert-load stage: with ``telemetry.expert_load`` on, the engine's collector
(``harness.servers.expert_load_collectors``) is reset when a cell's measured load starts and read when it ends, and the
counts are stored with the launch as ``expert_load.json``, beside the tokens the cell's requests should have routed, so
a reader can check one against the other.

A collector that fails costs the cell its counts, never the cell: the record then says why. The counts are the
engine's own (logical experts, before any EPLB remapping), pooled over its ranks; what the report makes of them
(imbalance, the hottest experts' share, how two workloads' routing differs) is ``harness.analysis.expert_balance``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from harness.endpoint_access import http_client
from harness.errors import ServerLost
from harness.load import RequestRecord
from harness.plan.cells import ServerConfig
from harness.servers import Runtime, resolve_model_path
from harness.servers.expert_load_collectors import EngineExpertLoad, ExpertCounts
from harness.store import write_atomic
from harness.stored_files import load_or_set_aside

log = logging.getLogger(__name__)


class ExpertLoadRecord(BaseModel):
    """One launch's counts for one cell, or why there are none."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    counts: ExpertCounts | None = None
    reason: str | None = None
    """Why there are no counts (the engine has no collector, or it failed)."""
    expected_rows: int
    """Rows the cell's completed requests make each layer compute: prompt tokens not served from the prefix cache
    (as the server reported them), plus completion tokens, less one per request (the last token is never fed
    back). Speculative verify steps add the draft positions they check; a cache whose hits the server does not
    report would remove tokens (both adapters ask their engine to report them)."""
    requests: int
    measured_s: float
    """Wall time of the cell's measured load, the denominator of the collector's share."""

    @property
    def overhead(self) -> float | None:
        """Share of the measured wall time spent inside the collector's hook (None where the engine does not
        time it)."""
        hook = self.counts.hook_seconds if self.counts else None
        return hook / self.measured_s if hook is not None and self.measured_s > 0 else None


def expected_rows(records: Sequence[RequestRecord]) -> tuple[int, int]:
    """(rows every MoE layer should route, completed requests) over the measured requests of a cell."""
    done = [r for r in records if not r.warmup and r.error is None and r.output_tokens > 0]
    rows = sum((r.prompt_tokens if r.prompt_tokens is not None else r.input_tokens) - (r.cached_tokens or 0)
               + r.output_tokens - 1 for r in done)
    return rows, len(done)


def model_top_k(server: ServerConfig) -> int | None:
    """Experts per token from the checkpoint's config (``num_experts_per_tok``), where it is on disk."""
    try:
        config = json.loads((Path(resolve_model_path(server)) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    value = config.get("num_experts_per_tok") or config.get("moe_topk")
    return int(value) if value else None


@dataclass(slots=True)
class ExpertLoadWatch:
    """One cell's collection on a running server: ``start`` when the measured load begins, ``finish`` after it."""

    collector: EngineExpertLoad | None
    """None where none can be reached (a deployment started without one): ``failure`` says why."""
    base_urls: tuple[str, ...]
    top_k: int | None
    failure: str | None = None
    dump_dir: Path | None = None
    """Where a deployment's collector writes its dumps, as this machine sees it (None: where the harness said)."""

    async def start(self) -> None:
        if self.collector is None:
            return
        try:
            async with http_client(self.base_urls[0] if self.base_urls else None) as client:
                await self.collector.reset(client, self.base_urls)
        except (httpx.HTTPError, ServerLost, ValidationError, KeyError, ValueError) as exc:
            self.failure = f"the collector could not be reset: {exc}"

    async def finish(self, label: str, records: Sequence[RequestRecord], measured_s: float,
                     path: Path) -> ExpertLoadRecord:
        rows, requests = expected_rows(records)
        counts, reason = None, self.failure
        if reason is None and self.collector is not None:
            try:
                async with http_client(self.base_urls[0] if self.base_urls else None) as client:
                    counts = await self.collector.read(client, self.base_urls, self.top_k, self.dump_dir)
            except (httpx.HTTPError, ServerLost, ValidationError, KeyError, ValueError, OSError) as exc:
                reason = f"the collector could not be read: {exc}"
        if reason:
            log.warning("cell %s: no expert load: %s", label, reason)
        record = ExpertLoadRecord(label=label, counts=counts, reason=reason, expected_rows=rows, requests=requests,
                                  measured_s=measured_s)
        write_atomic(path, record.model_dump_json(indent=1))
        return record


def expert_load_watch(server: ServerConfig, runtime: Runtime, base_urls: Sequence[str]) -> ExpertLoadWatch | None:
    """The cell's watch when the matrix asks for expert load and the engine has a collector; None otherwise. A
    deployment's watch says "not available" with the reason where its collector cannot be reached."""
    if not server.expert_load:
        return None
    if server.deployment is not None:
        return _deployment_watch(server, runtime, base_urls)
    if runtime.expert_load is None:
        return None
    return ExpertLoadWatch(runtime.expert_load, tuple(base_urls), model_top_k(server))


def _deployment_watch(server: ServerConfig, runtime: Runtime, base_urls: Sequence[str]) -> ExpertLoadWatch:
    deployment, name = server.deployment, server.deployment_name
    assert deployment is not None
    asked = deployment.expert_load
    dump_dir = Path(asked.dump_dir) if asked is not None and asked.dump_dir is not None else None
    why = None
    if runtime.expert_load is None:
        why = f"runtime {runtime.name} has no expert-load collector the harness knows"
    elif asked is None or not asked.enabled:
        why = (f"deployment {name} was not declared started with {runtime.name}'s collector (set "
               f"deployments.{name}.expert_load once it is)")
    elif runtime.name == "sglang" and dump_dir is None:
        why = (f"SGLang writes its recorder's dumps on the server's disk: name that directory as this machine sees "
               f"it in deployments.{name}.expert_load.dump_dir")
    collector = None if why else runtime.expert_load
    return ExpertLoadWatch(collector, tuple(base_urls), model_top_k(server), failure=f"not available: {why}"
                           if why else None, dump_dir=dump_dir)


def read_expert_load(path: Path) -> ExpertLoadRecord | None:
    """A stored record, or None where the launch stored none (or a damaged one: set aside, counted as not recorded)."""
    return load_or_set_aside(path, ExpertLoadRecord.model_validate_json)
