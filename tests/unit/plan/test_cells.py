from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.plan import expand
from harness.servers import fixture_names

from tests.support.matrices import BASE_MATRIX

REPO = Path(__file__).resolve().parents[3]


def test_cells_sharing_a_server_differ_only_client_side(write_matrix: Callable[[str], Path]) -> None:
    matrix = load_matrix(write_matrix(BASE_MATRIX + "  speculation: [off, ngram]\n  precision: [bf16, bf16-kvfp8]\n"))
    plan = expand(matrix)
    assert len(plan.groups) == 4  # 2 speculation x 2 precision; concurrency never adds a launch
    assert all(len(g.cells) == 2 for g in plan.groups)
    for group in plan.groups:
        assert {c.server.server_id for c in group.cells} == {group.server.server_id}


def test_ids_are_stable_and_distinct(write_matrix: Callable[[str], Path]) -> None:
    path = write_matrix(BASE_MATRIX)
    first = [c.cell_id for c in expand(load_matrix(path)).cells]
    second = [c.cell_id for c in expand(load_matrix(path)).cells]
    assert first == second
    assert len(set(first)) == len(first)


def test_id_ignores_timeouts_but_not_what_is_measured(write_matrix: Callable[[str], Path]) -> None:
    base = expand(load_matrix(write_matrix(BASE_MATRIX))).cells[0].cell_id
    slower = expand(load_matrix(write_matrix(BASE_MATRIX + "server: {startup_timeout_s: 5}\n"))).cells[0].cell_id
    seeded = expand(load_matrix(write_matrix(BASE_MATRIX + "server: {seed: 7}\n"))).cells[0].cell_id
    assert base == slower
    assert base != seeded


def test_adding_an_axis_value_keeps_existing_ids(write_matrix: Callable[[str], Path]) -> None:
    before = {c.cell_id for c in expand(load_matrix(write_matrix(BASE_MATRIX))).cells}
    wider = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [1, 2, 8]")
    after = {c.cell_id for c in expand(load_matrix(write_matrix(wider))).cells}
    assert before < after  # resume keeps finished cells when a sweep grows


def test_excludes_match_partial_values(write_matrix: Callable[[str], Path]) -> None:
    text = BASE_MATRIX + "  speculation: [off, {method: mtp, k: 2}]\nexclude:\n  - {speculation: mtp, concurrency: 2}\n"
    labels = [c.label for c in expand(load_matrix(write_matrix(text))).cells]
    assert labels == ["m/vllm/bf16/tp1/off/w/c1", "m/vllm/bf16/tp1/off/w/c2", "m/vllm/bf16/tp1/mtp2/w/c1"]


def test_default_matrix_plan() -> None:
    plan = expand(load_matrix(REPO / "matrices" / "default.yaml"))
    labels = {g.server.label for g in plan.groups}
    assert labels == {
        "tiny-qwen3-moe/vllm/bf16/tp1/off", "tiny-qwen3-moe/vllm/bf16/tp1/ngram3",
        "tiny-qwen3-moe/vllm/bf16-kvfp8/tp1/off",
        "tiny-qwen3-recall/vllm/bf16/tp1/off", "tiny-qwen3-recall/vllm/int8/tp1/off",
        "tiny-qwen3-recall/sglang/bf16/tp1/off",
        "tiny-qwen3-moe/sglang/bf16/tp1/off", "tiny-qwen3-moe/sglang/bf16/tp1/ngram3",
    }
    assert len(plan.cells) == 21  # 18 grid cells and the agent, text and tool-call cells
    # both runtimes on the same fixture, workload and concurrencies, off and n-gram
    for runtime in ("vllm", "sglang"):
        grid = {(c.server.speculation.root.label, c.concurrency) for c in plan.cells
                if c.server.runtime == runtime and c.server.model_name == "tiny-qwen3-moe"
                and c.server.precision.label == "bf16" and c.workload_name == "random-128x64"}
        assert grid == {(s, c) for s in ("off", "ngram3") for c in (1, 4, 16)}, runtime
    # the workloads whose routing the expert-load section compares, on one server
    assert {c.workload_name for c in plan.cells if c.server.label == "tiny-qwen3-moe/vllm/bf16/tp1/off"} == {
        "random-128x64", "agent", "text", "tool-calls"}
    # the int8 export beside its bf16 instrument at concurrency 4, where parity scores them, and SGLang's serving
    assert [(c.server.runtime, c.server.precision.label) for c in plan.cells
            if c.server.model_name == "tiny-qwen3-recall"] == [("vllm", "bf16"), ("vllm", "int8"), ("sglang", "bf16")]
    assert plan.matrix.parity is not None and plan.matrix.parity.reference_runtime == "vllm"
    assert {c.concurrency for c in plan.cells if c.server.model_name == "tiny-qwen3-recall"} == {4}
    assert plan.searches == ()  # the SLO search is in matrices/more.yaml
    # the speculation lever on two launches, the cells that can ship on the requests their p99 claims need
    assert {c.label for c in plan.cells if plan.launches_of(c) == 2} == {
        "tiny-qwen3-moe/sglang/bf16/tp1/off/random-128x64/c1", "tiny-qwen3-moe/sglang/bf16/tp1/ngram3/random-128x64/c1"}
    assert {c.label for c in plan.cells if c.workload.requests_for(c.concurrency) == 460} == {
        "tiny-qwen3-moe/vllm/bf16/tp1/off/random-128x64/c16", "tiny-qwen3-moe/vllm/bf16/tp1/ngram3/random-128x64/c16",
        "tiny-qwen3-moe/vllm/bf16-kvfp8/tp1/off/random-128x64/c16"}
    drafters = {g.server.label: fixture_names(g.server) for g in plan.groups}
    assert drafters["tiny-qwen3-recall/vllm/int8/tp1/off"] == {"tiny-qwen3-recall-w8a8"}
    # EAGLE-3 left the default for its own matrix, which serves the drafter beside its target
    eagle3 = expand(load_matrix(REPO / "matrices" / "eagle3.yaml"))
    assert {g.server.label: fixture_names(g.server) for g in eagle3.groups}[
        "tiny-qwen3-moe/vllm/bf16/tp1/eagle3k3"] == {"tiny-qwen3-moe", "tiny-qwen3-eagle3"}


def test_ids_keep_the_formula_they_were_first_published_with(write_matrix: Callable[[str], Path]) -> None:
    # New optional settings (load pattern, repeats, workload fields) must not rename cells measured before.
    from harness.plan.cells import _digest

    cell = expand(load_matrix(write_matrix(BASE_MATRIX))).cells[0]
    first = {"kind": "random", "input_tokens": 16, "output_tokens": 8, "range_ratio": 0.0, "num_requests": 4,
             "warmup_requests": 1, "api": "completions", "ignore_eos": True, "temperature": 0.0, "seed": 0}
    assert cell.cell_id == _digest({"server": cell.server.server_id, "workload": first, "concurrency": 1})
    assert cell.label.endswith("/w/c1")


def test_request_rate_axis_repeats_and_load_enter_ids_and_labels(write_matrix: Callable[[str], Path]) -> None:
    base = {c.cell_id for c in expand(load_matrix(write_matrix(BASE_MATRIX))).cells}
    rated = expand(load_matrix(write_matrix(BASE_MATRIX + "  request_rate: [.inf, 4]\n")))
    assert len(rated.cells) == 4 and len(rated.groups) == 1  # a rate is client-side: no extra launch
    assert [c.load.request_rate for c in rated.cells] == [None, 4.0, None, 4.0]
    assert {c.cell_id for c in rated.cells if c.load.request_rate is None} == base
    assert rated.cells[1].label.endswith("/w/c1/r4")
    repeated = expand(load_matrix(write_matrix(BASE_MATRIX + "repeats: 3\nload: {duration_s: 30}\n"))).cells
    assert all(c.repeats == 3 and c.load.duration_s == 30 for c in repeated)
    assert not {c.cell_id for c in repeated} & base
    excluded = expand(load_matrix(write_matrix(BASE_MATRIX + "  request_rate: [2, 4]\nexclude: [{request_rate: 4}]\n")))
    assert {c.load.request_rate for c in excluded.cells} == {2.0}


# The default matrix as its first baselines were measured (lock/default.baseline.json): new schema fields at their
# defaults must leave these ids alone, or resume and the gate lose every cell measured before.
PUBLISHED_DEFAULT = """
name: default
hardware: {kind: cpu, kv_cache_gib: 1}
slo: {ttft_ms: 1000, tpot_ms: 50}
models:
  tiny-deepseek-v3: {id: "fixture:tiny-deepseek-v3", max_model_len: 1024}
  tiny-qwen3-moe: {id: "fixture:tiny-qwen3-moe", max_model_len: 1024}
workloads:
  random-128x64: {kind: random, input_tokens: 128, output_tokens: 64, num_requests: 32, warmup_requests: 2}
axes:
  runtime: [vllm]
  precision: [bf16, bf16-kvfp8]
  speculation: ["off", {method: mtp, k: 1}, {method: ngram, k: 3, prompt_lookup_max: 4, prompt_lookup_min: 2}]
  concurrency: [1, 4, 16]
exclude:
  - {model: tiny-qwen3-moe, speculation: mtp}
  - {model: tiny-deepseek-v3, speculation: ngram}
  - {model: tiny-deepseek-v3, precision: bf16-kvfp8}
  - {speculation: ngram, precision: bf16-kvfp8}
"""
PUBLISHED_IDS = {
    "844e92a9fb64", "4e29b05c34ad", "47deb095fad2", "05f34f4af84f", "f5238aac734f", "4bda10a76573", "c399a18481f6",
    "1fe8fb9e7c5a", "bf959f6cce2c", "3ae870356429", "5517618760e7", "46985bcfa14a", "8ccae193d676", "9ffca6cbd8ae",
    "c172900a21f7",
}


def test_published_default_ids_survive_new_schema_fields(write_matrix: Callable[[str], Path]) -> None:
    assert {c.cell_id for c in expand(load_matrix(write_matrix(PUBLISHED_DEFAULT))).cells} == PUBLISHED_IDS
    # the same cells with every later-added setting written out at its default
    explicit = PUBLISHED_DEFAULT.replace(
        'speculation: ["off", {method: mtp, k: 1},',
        'speculation: ["off", {method: mtp, k: 1, top_k: 1},').replace(
        'max_model_len: 1024}\n  tiny-qwen3-moe',
        'max_model_len: 1024, quantization: {}}\n  tiny-qwen3-moe') + \
        "server: {prefix_caching: null, chunked_prefill: null}\nruntimes: {vllm: {image: null}}\nunsupported: error\n"
    assert {c.cell_id for c in expand(load_matrix(write_matrix(explicit, "explicit.yaml"))).cells} == PUBLISHED_IDS


@pytest.mark.parametrize("extra", ["server: {chunked_prefill: 512}\n", "server: {prefix_caching: false}\n",
                                   "server: {grammar_backend: xgrammar}\n",
                                   "runtimes: {vllm: {moe_a2a_backend: naive}}\n"])
def test_new_settings_enter_the_id_when_set(write_matrix: Callable[[str], Path], extra: str) -> None:
    base = {c.cell_id for c in expand(load_matrix(write_matrix(BASE_MATRIX))).cells}
    changed = {c.cell_id for c in expand(load_matrix(write_matrix(BASE_MATRIX + extra, "x.yaml"))).cells}
    assert not base & changed


def test_speculation_tree_enters_label_and_id(write_matrix: Callable[[str], Path]) -> None:
    text = BASE_MATRIX + "  speculation: [{method: mtp, k: 2}, {method: mtp, k: 2, top_k: 2, draft_tokens: 4}]\n"
    plan = expand(load_matrix(write_matrix(text)))
    assert [g.server.speculation.label for g in plan.groups] == ["mtp2", "mtp2t2"]
    assert len({c.cell_id for c in plan.cells}) == 4
