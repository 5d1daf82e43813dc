"""A report's scenario: one engine component per role of the deployment with its accelerators counted, the server's
flags as llm-d writes native args, and the load's lengths as the records show them (or only their mean)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.export import StoredCell
from harness.export.br_scenario import command_flags, load, sequence_length, stack
from harness.export.stored_cell import RunFiles
from harness.load import RequestRecord
from harness.plan import Cell, expand
from harness.result_records import CellResult
from harness.store import now_iso

from tests.support.exported_run import GPU_MATRIX, records
from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import summary

NO_FILES = RunFiles(matrix="t", run_id=None, lock=None, gate=None, predictions={}, declined={})


def _stored(cell: Cell, recorded: tuple[RequestRecord, ...] = ()) -> StoredCell:
    s = summary(100.0, 20.0)
    result = CellResult(cell_id=cell.cell_id, label=cell.label, server_id=cell.server.server_id, status="ok",
                        started_at=now_iso(), finished_at=now_iso(), summary=s)
    return StoredCell(cell, result, s, None, NO_FILES, recorded)


def test_command_flags_read_as_llm_d_writes_native_args() -> None:
    flags = command_flags("python -m vllm.entrypoints.openai.api_server /m --tp 2 --enforce-eager "
                          "--config='{\"a\": 1}' --middleware a --middleware b --port <port> --quiet")
    assert flags == {"--tp": "2", "--enforce-eager": None, "--config": '{"a": 1}', "--middleware": ["a", "b"],
                     "--port": "<port>", "--quiet": None}


def test_a_disaggregated_deployment_is_a_prefill_and_a_decode_component(write_matrix: Callable[..., Path]) -> None:
    deployments = GPU_MATRIX.replace("hardware:", "  topology: [{prefill: 1, decode: 2}, {replicas: 3}]\nhardware:")
    plan = expand(load_matrix(write_matrix(deployments)))
    pd = next(c for c in plan.cells if c.server.topology.kind == "pd")
    prefill, decode = stack(_stored(pd))
    assert (prefill.standardized.role, prefill.standardized.replicas, prefill.standardized.accelerator.count) == (
        "prefill", 1, 8)
    assert (decode.standardized.role, decode.standardized.replicas, decode.standardized.accelerator.count) == (
        "decode", 2, 16)
    assert prefill.metadata.label != decode.metadata.label and prefill.metadata.cfg_id == pd.server.server_id
    (replicas,) = stack(_stored(next(c for c in plan.cells if c.server.topology.kind == "replicas")))
    assert (replicas.standardized.role, replicas.standardized.replicas) == ("replica", 3)
    assert replicas.standardized.accelerator.count == 24


def test_without_a_lock_the_engine_is_named_but_no_version_or_command_is_made_up(
        write_matrix: Callable[..., Path]) -> None:
    (cell, *_) = expand(load_matrix(write_matrix(GPU_MATRIX))).cells
    (engine,) = stack(_stored(cell))
    assert engine.standardized.tool == "vllm" and engine.standardized.tool_version == ""
    assert engine.standardized.accelerator.model == "B200"  # what the matrix asked for
    assert engine.native.args is None and "command" not in (engine.native.config or {})


def test_a_cpu_server_counts_no_accelerator(write_matrix: Callable[..., Path]) -> None:
    (cell, *_) = expand(load_matrix(write_matrix(BASE_MATRIX))).cells
    (engine,) = stack(_stored(cell))
    assert engine.standardized.accelerator.count == 0 and engine.standardized.accelerator.model == "cpu"


def test_lengths_are_fixed_when_every_request_had_the_same_and_otherwise_described() -> None:
    assert sequence_length([16, 16]) is not None and sequence_length([16, 16]).model_dump(exclude_none=True) == {
        "distribution": "fixed", "value": 16}
    other = sequence_length([10, 20])
    assert other is not None and (other.distribution, other.value, other.min, other.max) == ("other", 15.0, 10, 20)
    assert other.std_dev == pytest.approx(5.0)
    assert sequence_length([]) is None


def test_the_load_without_records_states_only_the_mean_and_nothing_it_cannot_know(
        write_matrix: Callable[..., Path]) -> None:
    (cell, *_) = expand(load_matrix(write_matrix(BASE_MATRIX))).cells
    without = load(_stored(cell))
    assert without is not None
    assert without.standardized.input_seq_len.model_dump(exclude_none=True) == {"distribution": "other",
                                                                                 "value": 4096 / 32}
    assert without.standardized.output_seq_len is None and without.standardized.multi_turn is None
    measured = tuple(r for r in records((16, 16)) if not r.warmup)  # as stored_cells reads them
    with_records = load(_stored(cell, measured))
    assert with_records is not None and with_records.standardized.input_seq_len.distribution == "fixed"
    assert with_records.native.args == {"workload": "w", "concurrency": cell.concurrency, "repeats": 1,
                                        "burstiness": 1.0, "ramp_up_s": 0.0}


def test_sessions_make_a_multi_turn_load(write_matrix: Callable[..., Path]) -> None:
    (cell, *_) = expand(load_matrix(write_matrix(BASE_MATRIX))).cells
    turns = [r for r in records((16,) * 5) if r.ok and not r.warmup]
    sessions = tuple(replace(r, session=i % 2, turn=i // 2) for i, r in enumerate(turns))
    multi = load(_stored(cell, sessions))
    assert multi is not None and multi.standardized.multi_turn is not None
    assert multi.standardized.multi_turn.max_turns is not None
    assert (multi.standardized.multi_turn.max_turns.min, multi.standardized.multi_turn.max_turns.max) == (2, 3)
