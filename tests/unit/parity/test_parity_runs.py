"""The parity stage: runs stored per server and decoding, each server judged against its reference precision,
the verdict in every cell's parity.json, and the regression gate failing a cell that dropped."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.config.evidence_sections import BFCL_MULTI_TURN, BFCL_SINGLE_TURN, ParitySpec
from harness.errors import ConfigError
from harness.parity import (
    CATEGORIES,
    MULTI_TURN_CATEGORIES,
    ParityRun,
    ParityStage,
    load_items,
    read_cell_parity,
    write_run,
)
from harness.parity.parity_runs import RERUN, check_parity_suite, reference_of
from harness.plan import expand
from harness.store import Store
from harness.verdict import build_lock
from harness.verdict.baseline import BaselineFile, promote
from harness.verdict.gate import Against, check

from tests.support.bfcl_wire import fake_run
from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_launches, summary

MATRIX = BASE_MATRIX + """\
  precision: [bf16, bf16-kvfp8]
  speculation: ["off", ngram]
parity: {categories: [simple_python], limit: 200, decoding: [free, required], max_drop_pp: 1.0,
         cells: [{speculation: "off"}]}
"""


def verdicts(right: int, wrong: int) -> dict[str, bool]:
    """The sample MATRIX's parity scores (200 simple_python items), the first ``right`` of them answered right."""
    ids = [item.id for item in load_items(["simple_python"], limit=200, seed=0)]
    assert right + wrong == len(ids)
    return {item_id: i < right for i, item_id in enumerate(ids)}


def as_asked(run: ParityRun, spec: ParitySpec) -> ParityRun:
    """A stored run made with the request settings ``spec`` asks for (a run made otherwise is run again)."""
    settings = run.settings.model_copy(update={"max_tokens": spec.max_tokens, "concurrency": spec.concurrency,
                                               "seed": spec.seed, "timeout_s": spec.request_timeout_s})
    return run.model_copy(update={"settings": settings})


def test_servers_pair_with_their_reference_and_a_drop_fails_the_gate(write_matrix: Callable[..., Path],
                                                                     tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    spec = plan.matrix.parity
    assert spec is not None
    store = Store(tmp_path, plan.matrix.name)
    servers = {g.server.label: g for g in plan.groups}
    bf16, fp8 = servers["m/vllm/bf16/tp1/off"], servers["m/vllm/bf16-kvfp8/tp1/off"]
    stage = ParityStage(spec, store)
    assert stage.owed(bf16) and stage.owed(servers["m/vllm/bf16/tp1/ngram3"]) == ()  # not selected
    assert reference_of(fp8.server, [g.server for g in plan.groups], spec) == bf16.server
    assert stage.owed(fp8) == ("free", "required")
    for cell in plan.cells:
        store_launches(store, cell, [summary(100.0, 10.0)] * 3)  # a baseline needs three launches
    lock = build_lock(plan, store)
    baseline = BaselineFile(matrix=plan.matrix.name, machines=[promote(plan, store, lock)])
    for decoding in ("free", "required"):
        write_run(as_asked(fake_run(verdicts(180, 20), decoding), spec),
                  store.parity_run_path(bf16.server.server_id, decoding))
        write_run(as_asked(fake_run(verdicts(180, 20) if decoding == "required" else verdicts(150, 50), decoding),
                           spec), store.parity_run_path(fp8.server.server_id, decoding))
    assert stage.owed(fp8) == () and stage.owed(fp8, force=True)
    # a run of another sample or with other request settings is not the one the matrix asks for
    assert ParityStage(spec.model_copy(update={"limit": 100}), store).owed(fp8) == ("free", "required")
    assert ParityStage(spec.model_copy(update={"max_tokens": 96}), store).owed(fp8) == ("free", "required")
    assert stage.judge(plan) == 2
    reference = read_cell_parity(store.cell_dir(bf16.cells[0]) / "parity.json")
    assert reference.passed is True and reference.delta_pp == 0.0
    dropped = read_cell_parity(store.cell_dir(fp8.cells[1]) / "parity.json")
    assert dropped.passed is False and dropped.decoding == "free" and dropped.delta_pp == pytest.approx(-15.0)
    assert dropped.comparisons["required"].passed is True  # grammar-constrained decoding did not drop
    gate = check(plan, store, Against(baseline), plan.matrix.gates, lock)
    assert {r.label for r in gate.failures} == {c.label for c in fp8.cells} and gate.exit_code == 1


def test_the_reference_is_judged_on_a_rerun_of_its_free_decoding(write_matrix: Callable[..., Path],
                                                                  tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    spec = plan.matrix.parity
    assert spec is not None
    store = Store(tmp_path, plan.matrix.name)
    bf16 = next(g for g in plan.groups if g.server.label == "m/vllm/bf16/tp1/off")
    stage = ParityStage(spec, store)
    assert stage.owed(bf16) == ("free", "required", RERUN)
    assert ParityStage(spec.model_copy(update={"rerun_reference": False}), store).owed(bf16) == ("free", "required")
    for decoding in ("free", "required"):
        write_run(as_asked(fake_run(verdicts(180, 20), decoding), spec),
                  store.parity_run_path(bf16.server.server_id, decoding))
    # a rerun that loses 30 items: the measurement itself is not to be trusted, and the reference says so
    write_run(as_asked(fake_run(verdicts(150, 50), "free"), spec), store.parity_run_path(bf16.server.server_id, RERUN))
    assert stage.owed(bf16) == ()
    assert stage.judge(plan) == 1
    reference = read_cell_parity(store.cell_dir(bf16.cells[0]) / "parity.json")
    rerun = reference.comparisons["free"]
    assert rerun.rerun and rerun.reason.startswith("rerun of the reference against its first run: ")
    assert rerun.right_to_wrong == 30 and rerun.mcnemar_p is not None and rerun.mcnemar_p < 1e-6
    assert reference.passed is False and reference.decoding == "free"
    assert reference.comparisons["required"].delta_pp == 0.0 and set(reference.costs) == {"required"}


RUNTIMES = BASE_MATRIX + """\
  runtime: [vllm, sglang]
  precision: [bf16, int8]
exclude: [{runtime: sglang, precision: int8}]
parity: {categories: [simple_python], limit: 200, decoding: [free, required], reference_runtime: vllm}
"""


def test_another_runtime_is_judged_against_the_reference_runtimes_server(write_matrix: Callable[..., Path],
                                                                          tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(RUNTIMES)))
    spec = plan.matrix.parity
    assert spec is not None
    check_parity_suite(plan)
    store = Store(tmp_path, plan.matrix.name)
    servers = {g.server.label: g for g in plan.groups}
    vllm, int8, sglang = (servers[f"m/{r}/tp1/off"] for r in ("vllm/bf16", "vllm/int8", "sglang/bf16"))
    every = [g.server for g in plan.groups]
    assert reference_of(sglang.server, every, spec) == vllm.server == reference_of(int8.server, every, spec)
    assert reference_of(vllm.server, every, spec) == vllm.server  # the reference judges itself on its rerun
    stage = ParityStage(spec, store)
    assert stage.owed(vllm) == ("free", "required", RERUN) and stage.owed(sglang) == ("free", "required")
    for decoding in ("free", "required"):
        write_run(as_asked(fake_run(verdicts(180, 20), decoding), spec),
                  store.parity_run_path(vllm.server.server_id, decoding))
        # SGLang's grammar-constrained answers lose 30 items that vLLM's kept; its free ones keep them all
        write_run(as_asked(fake_run(verdicts(150, 50) if decoding == "required" else verdicts(180, 20), decoding),
                           spec), store.parity_run_path(sglang.server.server_id, decoding))
    write_run(as_asked(fake_run(verdicts(180, 20), "free"), spec), store.parity_run_path(vllm.server.server_id, RERUN))
    assert stage.judge(plan) == 2  # int8 has no runs stored
    judged = read_cell_parity(store.cell_dir(sglang.cells[0]) / "parity.json")
    assert judged.passed is False and judged.decoding == "required"
    assert judged.comparisons["required"].delta_pp == pytest.approx(-15.0)
    assert judged.comparisons["free"].delta_pp == 0.0 and not judged.comparisons["free"].rerun


def test_a_reference_runtime_without_the_reference_precision_is_refused(write_matrix: Callable[..., Path]) -> None:
    plan = expand(load_matrix(write_matrix(RUNTIMES.replace("reference_runtime: vllm", "reference_runtime: trt"))))
    with pytest.raises(ConfigError, match="parity.reference_runtime.*one of \\['sglang', 'vllm'\\]"):
        check_parity_suite(plan)


def test_a_matrix_without_its_reference_precision_is_refused_before_launch(write_matrix: Callable[..., Path]) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX + "  precision: [bf16-kvfp8]\nparity: {limit: 2}\n")))
    with pytest.raises(ConfigError, match="parity.reference"):
        check_parity_suite(plan)


def test_unknown_categories_are_a_config_error(write_matrix: Callable[..., Path]) -> None:
    with pytest.raises(ConfigError, match="unknown BFCL categories"):
        load_matrix(write_matrix(BASE_MATRIX + "parity: {categories: [simple_java_script]}\n"))


def test_a_sample_too_small_for_any_verdict_is_refused_before_launch(write_matrix: Callable[..., Path]) -> None:
    """Five items all flipping one way give McNemar p = 2/32 > 0.05: no drop could ever fail the gate."""
    plan = expand(load_matrix(write_matrix(BASE_MATRIX + "parity: {limit: 1}\n")))
    with pytest.raises(ConfigError, match=r"parity.limit.*5 single-turn items.*p = 0.0625"):
        check_parity_suite(plan)
    check_parity_suite(expand(load_matrix(write_matrix(BASE_MATRIX + "parity: {limit: 2}\n"))))


def test_a_sample_too_small_for_a_conclusive_pass_is_named_before_launch(write_matrix: Callable[..., Path],
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="harness.parity.parity_runs"):
        check_parity_suite(expand(load_matrix(write_matrix(BASE_MATRIX + "parity: {limit: 2}\n"))))
    assert "10 single-turn items per run are fewer than the 157 a pass needs for 80% power" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="harness.parity.parity_runs"):
        check_parity_suite(expand(load_matrix(write_matrix(BASE_MATRIX + "parity: {limit: 2, min_power: 0}\n"))))
    assert "power" not in caplog.text


def test_multi_turn_needs_a_tool_parser_at_plan_time(write_matrix: Callable[..., Path]) -> None:
    matrix = BASE_MATRIX + "parity: {categories: [multi_turn_base], limit: 6}\n"
    with pytest.raises(ConfigError, match=r"models.m.family.*no tool-call parser"):
        check_parity_suite(expand(load_matrix(write_matrix(matrix))))
    with_parser = matrix.replace('"fixture:tiny-qwen3-moe"}', '"fixture:tiny-qwen3-moe", family: qwen3}')
    plan = expand(load_matrix(write_matrix(with_parser)))
    check_parity_suite(plan)
    spec = plan.matrix.parity
    assert spec is not None and spec.multi_turn == ("multi_turn_base",) and spec.single_turn == ()
    store = Store(Path("/nonexistent"), plan.matrix.name)
    assert ParityStage(spec, store).owed(plan.groups[0]) == ("multi_turn",)  # free decoding only


def test_without_a_parity_block_the_stage_owes_and_judges_nothing(write_matrix: Callable[..., Path],
                                                                  tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX)))
    stage = ParityStage(plan.matrix.parity, Store(tmp_path, plan.matrix.name))
    assert stage.owed(plan.groups[0], force=True) == () and stage.judge(plan) == 0


def test_the_config_lists_the_categories_the_stage_runs() -> None:
    assert set(BFCL_SINGLE_TURN) == set(CATEGORIES) and BFCL_MULTI_TURN == MULTI_TURN_CATEGORIES
