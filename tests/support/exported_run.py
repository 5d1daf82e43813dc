"""A stored GPU run to export, with every kind of file a run leaves, and each cell in a different state.

Four cells (concurrency 1 and 2, speculation off and MTP k=2, 8 GPUs per replica):

- ``single`` (off, c1): one launch, its records (one warm-up, one failure, lengths that vary), NVML telemetry,
  parity, a prediction, the server's prefix cache and a gate row;
- ``launched`` (mtp2, c1): three launches, pooled, each launch's result and records stored apart, no telemetry,
  no prediction (declined with a reason);
- ``failed`` (off, c2): failed; ``unrun`` (mtp2, c2): never ran.

The run's lock, run stamp, gate verdict and predictions are written as the pipeline writes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter

from harness.config import load_matrix
from harness.host import HardwareInfo
from harness.load import RequestRecord, write_jsonl
from harness.load.records import ErrorInfo
from harness.metrics import CellSummary
from harness.plan import Cell, Plan, expand
from harness.predict import NoPrediction, PlanPredictions, Prediction, write_predictions
from harness.result_records import CellResult
from harness.servers.prometheus import PrefixCacheStats, ServerStats
from harness.store import Store, now_iso
from harness.telemetry import DeviceTelemetry, TelemetrySummary, write_telemetry
from harness.verdict import GateResult, GateRow, GateVerdict, Lock, write_lock
from harness.verdict.lock import EngineInfo, HarnessInfo, ModelInfo, ServerInfo

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_failed, store_launches, store_parity, summary

GPU_MATRIX = BASE_MATRIX + """\
  speculation: ["off", {method: mtp, k: 2}]
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 8}
parity: {max_drop_pp: 1.0}
"""
GPU_NAME = "NVIDIA B200"
ENGINE_VERSION = "0.11.0"
COMMAND = ("<repo>/.venv/bin/python -m vllm.entrypoints.openai.api_server --model <repo>/build/fixtures/m "
           "--port <port> --tensor-parallel-size 8 --enforce-eager --speculative-config "
           "'{\"method\": \"mtp\", \"num_speculative_tokens\": 2}' --max-model-len=2048")
PROMPTS = (14, 16, 18, 16)
"""The measured, completed requests' prompt lengths of the ``single`` cell (server-counted)."""
LAUNCH_FACTORS = (0.98, 1.0, 1.02)


@dataclass(frozen=True, slots=True)
class StoredRun:
    plan: Plan
    store: Store
    single: Cell
    launched: Cell
    failed: Cell
    unrun: Cell
    launch_summaries: tuple[CellSummary, ...]


def records(prompts: tuple[int, ...], output_tokens: int = 8) -> list[RequestRecord]:
    """A warm-up, the completed requests with these prompt lengths, and one failure."""
    done = [RequestRecord(index=i, warmup=False, input_tokens=16, max_tokens=output_tokens, send_time=0.1 * i,
                          end_time=0.1 * i + 0.5, chunk_times=tuple(0.05 * (k + 1) for k in range(output_tokens)),
                          chunk_tokens=(1,) * output_tokens, output_tokens=output_tokens, prompt_tokens=p)
            for i, p in enumerate(prompts)]
    warm = RequestRecord(index=0, warmup=True, input_tokens=99, max_tokens=output_tokens, send_time=0.0,
                         end_time=0.2, chunk_times=(0.1,), chunk_tokens=(1,), output_tokens=1, prompt_tokens=99)
    failed = RequestRecord(index=len(prompts), warmup=False, input_tokens=16, max_tokens=output_tokens,
                           send_time=0.5, end_time=0.6, error=ErrorInfo(kind="http_status", message="500",
                                                                        status_code=500))
    return [warm, *done, failed]


def _lock(plan: Plan) -> Lock:
    servers = {g.server.server_id: ServerInfo(label=g.server.label, runtime=g.server.runtime, command=COMMAND,
                                              command_source="log", server_version=ENGINE_VERSION)
               for g in plan.groups}
    return Lock(created_at=now_iso(), matrix=plan.matrix.name, matrix_sha256="0" * 64,
                harness=HarnessInfo(version="0.1.0", commit="c0ffee", dirty=False),
                hardware=HardwareInfo(kind="gpu", name=GPU_NAME, count=8, driver="580.1"),
                engines={"vllm": EngineInfo(package="vllm", package_version=ENGINE_VERSION, python="<repo>/.venv")},
                models={"fixture:tiny-qwen3-moe": ModelInfo(id="fixture:tiny-qwen3-moe", revision=None, local=True,
                                                            config_sha256=None, tokenizer_sha256=None,
                                                            weights_sha256={})},
                seeds={"server.seed": 0}, servers=servers)


def _telemetry() -> TelemetrySummary:
    device = DeviceTelemetry(index=0, name=GPU_NAME, status="ok", samples=100, duration_s=10.0, power_w_mean=500.0,
                             power_w_max=600.0, energy_j=5000.0, energy_source="counter", sm_util_pct_mean=80.0,
                             mem_util_pct_mean=40.0, memory_used_mib_peak=70000.0, sm_clock_mhz_mean=1800.0,
                             mem_clock_mhz_mean=2600.0, temperature_c_max=70.0)
    return TelemetrySummary(available=True, interval_s=0.1, driver_version="580.1", device_count=8, duration_s=10.0,
                            power_w_per_device_mean=500.0, power_w_total_mean=4000.0, power_w_max=600.0,
                            energy_j_total=40000.0, energy_source="counter", output_tokens=8000,
                            energy_j_per_output_token=5.0, output_tok_s=800.0, tok_s_per_mw=200000.0,
                            devices=(device.model_copy(update={"sm_util_pct_mean": 60.0}), device))


def stored_run(matrix_path: Path, root: Path) -> StoredRun:
    """The run of ``GPU_MATRIX`` (written at ``matrix_path``) stored under ``root``."""
    plan = expand(load_matrix(matrix_path))
    store = Store(root / "reports", plan.matrix.name, lock_dir=root / "lock")
    by = {(c.server.speculation.label, c.concurrency): c for c in plan.cells}
    single, launched, failed, unrun = by[("off", 1)], by[("mtp2", 1)], by[("off", 2)], by[("mtp2", 2)]
    store.begin_run(fresh=True)

    first = summary(800.0, 20.0).model_copy(update={"server": ServerStats(
        prefix_cache=PrefixCacheStats(queries=400, hits=100, hit_rate=0.25), counters={"vllm:num_preemptions": 0.0})})
    store.write_result(single, CellResult(cell_id=single.cell_id, label=single.label, server_id=single.server.server_id,
                                          status="ok", started_at="2026-11-28T07:00:00+00:00",
                                          finished_at="2026-11-28T07:00:30+00:00", summary=first))
    write_jsonl(store.records_path(single), records(PROMPTS))
    write_telemetry(_telemetry(), store.telemetry_path(single))
    store_parity(store, single, passed=True, delta_pp=-0.4)

    launches = tuple(summary(1600.0 * f, 10.0, acceptance_rate=0.7) for f in LAUNCH_FACTORS)
    store_launches(store, launched, list(launches))
    for k, own in enumerate(launches):
        store.write_result(launched, CellResult(cell_id=launched.cell_id, label=launched.label,
                                                server_id=launched.server.server_id, status="ok",
                                                started_at=now_iso(), finished_at=now_iso(), summary=own), launch=k)
        write_jsonl(store.records_path(launched, k), records((16,) * 4))
    store_failed(store, failed)

    write_lock(_lock(plan), store.run_lock_path)
    row = GateRow(label=single.label, metric="output_throughput", unit="tok/s", direction="higher", baseline=790.0,
                  current=800.0, status="ok", ratio=1.01, low=0.97, high=1.05, noise=0.02, launches=(3, 1))
    verdict = GateVerdict(baseline=str(store.baseline_path()), result=GateResult(rows=(row,), provenance=(),
                                                                                 tolerance=0.1, launches=3),
                          error=None, committed_lock=str(store.committed_lock_path), drift=(), lock_committed=True)
    store.gate_path.write_bytes(TypeAdapter(GateVerdict).dump_json(verdict, indent=2))
    write_predictions(PlanPredictions({
        single.cell_id: Prediction(cell_id=single.cell_id, predictor="aiconfigurator", predictor_version="0.12.0",
                                   ttft_ms=40.0, tpot_ms=25.0, output_tok_s=1000.0, tok_s_user=40.0),
        launched.cell_id: NoPrediction(cell_id=launched.cell_id, predictor="aiconfigurator",
                                       reason="no MTP data for this GPU")}), store.predictions_path)
    return StoredRun(plan, store, single, launched, failed, unrun, launches)
