from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.errors import ConfigError
from harness.pipeline import load_plan
from harness.plan import expand

from tests.support.matrices import BASE_MATRIX

REPO = Path(__file__).resolve().parents[3]


def error_for(write_matrix: Callable[[str], Path], text: str) -> ConfigError:
    path = write_matrix(text)
    with pytest.raises(ConfigError) as info:
        load_plan(path)
    assert str(path) in str(info.value)
    assert "fix:" in str(info.value)
    return info.value


def test_default_matrix_loads() -> None:
    matrix = load_matrix(REPO / "matrices" / "default.yaml")
    assert matrix.name == "default"
    assert set(matrix.models) == {"tiny-qwen3-moe", "tiny-qwen3-recall"}
    assert matrix.models["tiny-qwen3-recall"].checkpoints == {"int8": "fixture:tiny-qwen3-recall-w8a8"}


def test_unknown_key_names_path_and_valid_keys(write_matrix: Callable[[str], Path]) -> None:
    err = error_for(write_matrix, BASE_MATRIX + "  concurency: [4]\n")
    assert err.key == "axes.concurency"
    assert "unknown key" in err.problem
    assert "concurrency" in err.fix  # the valid keys are listed


def test_unknown_key_in_workload(write_matrix: Callable[[str], Path]) -> None:
    err = error_for(write_matrix, BASE_MATRIX.replace("num_requests: 4", "num_reqs: 4"))
    assert err.key.startswith("workloads.w")
    assert "num_requests" in err.fix


def test_wrong_type(write_matrix: Callable[[str], Path]) -> None:
    err = error_for(write_matrix, BASE_MATRIX.replace("input_tokens: 16", "input_tokens: lots"))
    assert err.key == "workloads.w.input_tokens"


def test_unknown_speculation_method(write_matrix: Callable[[str], Path]) -> None:
    err = error_for(write_matrix, BASE_MATRIX + "  speculation: [medusa]\n")
    assert "axes.speculation" in err.key
    assert "mtp" in err.problem  # the valid methods are named



def test_unknown_fixture_drafter_is_named_with_the_fixtures_that_exist(write_matrix: Callable[[str], Path]) -> None:
    err = error_for(write_matrix, BASE_MATRIX + '  speculation: [{method: draft_model, draft_model: "fixture:tiny"}]\n')
    assert err.key == "axes.speculation.0.draft_model"
    assert "unknown fixture 'tiny'" in err.problem and "fixture:tiny-qwen3-draft" in err.problem


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_matrix(tmp_path / "nope.yaml")


def test_invalid_yaml_names_line(write_matrix: Callable[[str], Path]) -> None:
    err = error_for(write_matrix, "name: t\nmodels: {m: [\n")
    assert "invalid YAML" in err.problem
    assert err.key.startswith("line ")


def test_excludes_removing_every_cell(write_matrix: Callable[[str], Path]) -> None:
    err = error_for(write_matrix, BASE_MATRIX + "exclude:\n  - {model: m}\n")
    assert err.key == "exclude"
    assert "every cell" in err.problem


def test_exclude_with_unknown_axis(write_matrix: Callable[[str], Path]) -> None:
    err = error_for(write_matrix, BASE_MATRIX + "exclude:\n  - {gpu: h100}\n")
    assert "exclude[0]" in err.problem


def test_axis_names_must_resolve(write_matrix: Callable[[str], Path]) -> None:
    err = error_for(write_matrix, BASE_MATRIX + "  model: [other]\n")
    assert "'other' is not defined" in err.problem


def test_yaml_bare_off_means_speculation_off(write_matrix: Callable[[str], Path]) -> None:
    matrix = load_matrix(write_matrix(BASE_MATRIX + "  speculation: [off, mtp]\n"))
    assert [s.label for s in matrix.axes.speculation] == ["off", "mtp1"]


def test_a_workload_longer_than_the_model_is_rejected_before_launch(write_matrix: Callable[[str], Path]) -> None:
    text = BASE_MATRIX.replace('id: "fixture:tiny-qwen3-moe"', 'id: "fixture:tiny-qwen3-moe", max_model_len: 20')
    err = error_for(write_matrix, text)
    assert "workloads.w: prompt + output reach 24 tokens" in err.problem and "max_model_len (20)" in err.problem
    shaped = BASE_MATRIX.replace("{kind: random, input_tokens: 16, output_tokens: 8,", "{kind: random, shape: 8k/1k,")
    assert "16590 tokens" in error_for(write_matrix, shaped).problem  # ceil(8192*1.8) + ceil(1024*1.8)


def test_load_settings_are_checked(write_matrix: Callable[[str], Path]) -> None:
    assert "set load.request_rate or axes.request_rate" in error_for(
        write_matrix, BASE_MATRIX + "load: {burstiness: 0.5}\n").problem
    assert "keep one" in error_for(
        write_matrix, BASE_MATRIX + "  request_rate: [1]\nload: {request_rate: 2}\n").problem
    err = error_for(write_matrix, BASE_MATRIX + "repeats: 0\n")
    assert err.key == "repeats"
    matrix = load_matrix(write_matrix(BASE_MATRIX + "  request_rate: [1]\nload: {burstiness: 0.5, ramp_up_s: 5}\n"))
    assert matrix.request_rates() == (1.0,) and matrix.load.burstiness == 0.5


def test_nvfp4_is_read_as_fp4(write_matrix: Callable[[str], Path]) -> None:
    text = BASE_MATRIX + "  precision: [nvfp4, mxfp4-kvfp8]\nexclude: [{precision: nvfp4}]\n"
    matrix = load_matrix(write_matrix(text))
    assert [p.label for p in matrix.axes.precision] == ["fp4", "mxfp4-kvfp8"]
    assert [c.server.precision.label for c in expand(matrix).cells] == ["mxfp4-kvfp8", "mxfp4-kvfp8"]


def test_speculation_tree_needs_its_width(write_matrix: Callable[[str], Path]) -> None:
    err = error_for(write_matrix, BASE_MATRIX + "  speculation: [{method: eagle3, k: 3, top_k: 4, draft_model: d}]\n")
    assert "draft_tokens" in err.problem
    err = error_for(write_matrix, BASE_MATRIX + "  speculation: [{method: mtp, k: 3, draft_tokens: 3}]\n")
    assert "verifies 4 tokens" in err.problem


def test_serving_settings(write_matrix: Callable[[str], Path]) -> None:
    matrix = load_matrix(write_matrix(BASE_MATRIX + "server: {chunked_prefill: off, prefix_caching: false}\n"))
    assert matrix.server.chunked_prefill == "off" and matrix.server.prefix_caching is False
    err = error_for(write_matrix, BASE_MATRIX + "server: {grammar_backend: regex}\n")
    assert err.key == "server.grammar_backend" and "xgrammar" in err.problem


def test_production_matrices_load() -> None:
    for name in ("deepseek-v31-b200", "qwen3-235b-b200"):
        matrix = load_matrix(REPO / "matrices" / f"{name}.yaml")
        assert matrix.unsupported == "skip" and matrix.hardware.kind == "gpu"


AGENT = """
  a: {kind: agent, num_requests: 2, turns: {min: 2, max: 6}, system_prompt_tokens: 100, user_tokens: 10,
      tool_result_tokens: 50, output_tokens: 20}
"""


def test_an_agent_whose_last_turn_cannot_fit_is_rejected(write_matrix: Callable[[str], Path]) -> None:
    text = BASE_MATRIX.replace('id: "fixture:tiny-qwen3-moe"', 'id: "fixture:tiny-qwen3-moe", max_model_len: 400')
    text = text.replace("workloads:\n", "workloads:" + AGENT)
    err = error_for(write_matrix, text)
    # 100 + 10 + 20 for the first turn, then 5 more turns of 50 + 20
    assert "workloads.a: prompt + output reach 480 tokens" in err.problem and "max_model_len (400)" in err.problem


def test_an_slo_search_needs_an_slo_and_one_axis(write_matrix: Callable[[str], Path]) -> None:
    search = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [1, {search: slo, max: 16}]")
    err = error_for(write_matrix, search)
    assert "an SLO search needs an SLO to meet" in err.problem and "axes.concurrency" in err.problem
    both = search + "  request_rate: [{search: slo}]\nslo: {ttft_p99_ms: 500}\n"
    assert "both search" in error_for(write_matrix, both).problem
    fractional = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [{search: slo, min: 1.5}]") + \
        "slo: {tpot_ms: 50}\n"
    assert "whole numbers" in error_for(write_matrix, fractional).problem


def test_an_slo_search_expands_per_server_and_excludes_select_it(write_matrix: Callable[[str], Path]) -> None:
    text = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [1, {search: slo, max: 16}]\n"
                                                      "  speculation: [off, ngram]") + "slo: {tpot_ms: 50}\n"
    plan = expand(load_matrix(write_matrix(text)))
    assert [len(g.cells) for g in plan.groups] == [1, 1] and [len(g.searches) for g in plan.groups] == [1, 1]
    assert plan.searches[0].probe(8).concurrency == 8 and plan.searches[0].probe(1) == plan.groups[0].cells[0]
    excluded = expand(load_matrix(write_matrix(text + "exclude:\n  - {speculation: ngram, concurrency: search}\n")))
    assert [len(g.searches) for g in excluded.groups] == [1, 0] and len(excluded.cells) == 2
    listed = expand(load_matrix(write_matrix(text + "exclude:\n  - {speculation: [off, ngram], concurrency: 1}\n")))
    assert [len(g.cells) for g in listed.groups] == [0, 0] and len(listed.searches) == 2


def test_more_launches_more_requests_and_claims_select_cells(write_matrix: Callable[[str], Path]) -> None:
    """Rules that raise some cells' launches or requests: judged on the cells they select, like excludes."""
    extra = ("axes:\n  concurrency: [1, 2]\n  speculation: ['off', {method: ngram, k: 3}]\n"
             "more_launches: [{cells: {speculation: ngram, concurrency: 1}, launches: 3}]\n"
             "claims: {cells: [{concurrency: 2}], num_requests: 460}\n"
             "more_requests: [{cells: {concurrency: 1, speculation: 'off'}, num_requests: 64},\n"
             "                {cells: {concurrency: 2}, num_requests: 100}]\n")
    plan = expand(load_matrix(write_matrix(BASE_MATRIX.replace("axes:\n  concurrency: [1, 2]\n", "") + extra)))
    launches = {c.label: plan.launches_of(c) for c in plan.cells}
    assert launches == {"m/vllm/bf16/tp1/off/w/c1": 1, "m/vllm/bf16/tp1/off/w/c2": 1,
                        "m/vllm/bf16/tp1/ngram3/w/c1": 3, "m/vllm/bf16/tp1/ngram3/w/c2": 1}
    assert plan.rounds() == 3 and plan.rounds(5) == 5 and plan.launches_of(plan.cells[0], 2) == 2
    requests = {c.label: c.workload.requests_for(c.concurrency) for c in plan.cells}
    assert requests["m/vllm/bf16/tp1/off/w/c2"] == requests["m/vllm/bf16/tp1/ngram3/w/c2"] == 460  # the most asked
    assert requests["m/vllm/bf16/tp1/off/w/c1"] == 64 and requests["m/vllm/bf16/tp1/ngram3/w/c1"] == 4


@pytest.mark.parametrize(("rule", "key", "message"), [
    ("more_launches: [{cells: {concurrency: 8}, launches: 2}]", "more_launches[0].cells", "selects no cell"),
    ("more_launches: [{cells: {color: red}, launches: 2}]", "more_launches[0].cells", "keys must be axis names"),
    ("more_launches: [{cells: {concurrency: 1}, launches: 1}]", "more_launches.0.launches", "greater than or equal"),
    ("claims: {cells: [{concurrency: 1}, {workload: x}], num_requests: 9}", "claims.cells[1]", "selects no cell"),
    ("more_requests: [{cells: {concurrency: 8}, num_requests: 64}]", "more_requests[0].cells", "selects no cell"),
    ("more_requests: [{cells: {concurrency: 1}, num_requests: 0}]", "more_requests.0.num_requests", "greater than"),
])
def test_rules_that_select_nothing_are_refused(write_matrix: Callable[[str], Path], rule: str, key: str,
                                               message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_plan(write_matrix(BASE_MATRIX + rule + "\n"))
    assert key in str(caught.value) and message in str(caught.value), str(caught.value)
