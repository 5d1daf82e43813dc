from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.config.workloads import DatasetWorkload
from harness.errors import ConfigError
from harness.load import make_requests
from harness.load.dataset_prompts import conversation_of

ROWS = [
    {"id": "a", "conversations": [{"from": "human", "value": "w1 w2 w3"}, {"from": "gpt", "value": "w4 w5"}]},
    {"id": "b", "conversations": [{"from": "system", "value": "w9"}, {"from": "human", "value": "w6"},
                                  {"from": "gpt", "value": "w7 w8 w9 w10"}]},
    {"id": "c", "conversations": [{"from": "human", "value": "w11 w12"}]},  # no reply: skipped
    {"id": "d", "conversations": [{"from": "human", "value": "w13 w14 w15 w16 w17"}, {"from": "gpt", "value": "w1"}]},
]


def _jsonl(tmp_path: Path, rows: list[dict[str, object]] = ROWS) -> Path:
    path = tmp_path / "chats.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(autouse=True)
def _datasets_installed(request: pytest.FixtureRequest) -> None:
    # A dependency (pyproject); skipped rather than failing collection in an environment that predates it. A bfcl:
    # source reads its rows without it.
    if request.node.name != "test_a_missing_datasets_package_is_a_config_error" and "bfcl" not in request.node.name:
        pytest.importorskip("datasets")
        pytest.importorskip("pyarrow")


def test_a_missing_datasets_package_is_a_config_error(tmp_path: Path, tiny_tokenizer_dir: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets now raises ImportError
    with pytest.raises(ConfigError, match="needs the 'datasets' package"):
        make_requests(DatasetWorkload(path=str(_jsonl(tmp_path))), 1, tiny_tokenizer_dir)


def test_sharegpt_prompts_and_reply_lengths(tmp_path: Path, tiny_tokenizer_dir: Path) -> None:
    workload = DatasetWorkload(path=str(_jsonl(tmp_path)), seed=3)
    requests = make_requests(workload, 6, tiny_tokenizer_dir)
    expected = {"w1 w2 w3": (3, 2), "w6": (1, 4), "w13 w14 w15 w16 w17": (5, 1)}
    assert {str(r.prompt) for r in requests} == set(expected)  # the row without a reply never appears
    for request in requests:
        assert (request.input_tokens, request.max_tokens) == expected[str(request.prompt)]
        assert request.api == "chat" and request.ignore_eos
    assert [r.prompt for r in requests[:3]] == [r.prompt for r in requests[3:]]  # cycled in one seeded order
    assert requests == make_requests(workload, 6, tiny_tokenizer_dir)


def test_fixed_output_and_max_input_filter(tmp_path: Path, tiny_tokenizer_dir: Path) -> None:
    workload = DatasetWorkload(path=str(_jsonl(tmp_path)), output_tokens=9, max_input_tokens=3)
    requests = make_requests(workload, 8, tiny_tokenizer_dir)
    assert {str(r.prompt) for r in requests} == {"w1 w2 w3", "w6"}
    assert {r.max_tokens for r in requests} == {9}
    long_only = tmp_path / "long" / "chats.jsonl"
    long_only.parent.mkdir()
    long_only.write_text(json.dumps(ROWS[3]) + "\n")
    with pytest.raises(ConfigError, match="every prompt is longer"):
        make_requests(DatasetWorkload(path=str(long_only), max_input_tokens=4), 1, tiny_tokenizer_dir)


def test_json_and_parquet_files_and_openai_messages(tmp_path: Path, tiny_tokenizer_dir: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    as_json = tmp_path / "chats.json"
    as_json.write_text(json.dumps(ROWS))
    parquet = tmp_path / "chats.parquet"
    messages = [{"messages": [{"role": "user", "content": "w2 w3"}, {"role": "assistant", "content": "w4"}]}]
    pq.write_table(pa.Table.from_pylist(messages), parquet)
    from_json = make_requests(DatasetWorkload(path=str(as_json)), 3, tiny_tokenizer_dir)
    assert {str(r.prompt) for r in from_json} == {"w1 w2 w3", "w6", "w13 w14 w15 w16 w17"}
    from_parquet = make_requests(DatasetWorkload(path=str(parquet), api="completions"), 2, tiny_tokenizer_dir)
    assert [(r.prompt, r.input_tokens, r.max_tokens, r.api) for r in from_parquet] == [("w2 w3", 2, 1,
                                                                                         "completions")] * 2


def test_conversation_rules() -> None:
    assert conversation_of({"conversations": [{"from": "gpt", "value": "hi"}, {"from": "human", "value": "q"},
                                              {"from": "gpt", "value": "a"}]}) is not None
    assert conversation_of({"conversations": [{"from": "human", "value": " "}, {"from": "gpt", "value": "a"}]}) is None
    assert conversation_of({"text": "no conversation"}) is None


def test_unreadable_sources_are_config_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              tiny_tokenizer_dir: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        make_requests(DatasetWorkload(path=str(tmp_path / "missing.jsonl")), 1, tiny_tokenizer_dir)
    text = tmp_path / "chats.txt"
    text.write_text("hello")
    with pytest.raises(ConfigError, match="unsupported file type"):
        make_requests(DatasetWorkload(path=str(text)), 1, tiny_tokenizer_dir)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n")
    with pytest.raises(ConfigError, match="cannot load the dataset from the file"):
        make_requests(DatasetWorkload(path=str(broken)), 1, tiny_tokenizer_dir)
    empty = _jsonl(tmp_path, [{"conversations": []}])
    with pytest.raises(ConfigError, match="no row holds"):
        make_requests(DatasetWorkload(path=str(empty)), 1, tiny_tokenizer_dir)
    # an offline machine (forced here, so the test never waits on the network) and a hub id
    import datasets
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ConfigError, match="is this machine online"):
        make_requests(DatasetWorkload(path="someorg/no-such-dataset"), 1, tiny_tokenizer_dir)


def _bfcl_user_turns(category: str) -> list[str]:
    """The first user turn of each row, read straight from the installed wheel's data file."""
    spec = importlib.util.find_spec("bfcl_eval")
    assert spec is not None and spec.submodule_search_locations
    file = Path(next(iter(spec.submodule_search_locations))) / "data" / f"BFCL_v4_{category}.json"
    rows = [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
    return [next(m["content"] for m in row["question"][0] if m["role"] == "user") for row in rows]


def test_a_bfcl_source_sends_the_categorys_user_requests(tiny_tokenizer_dir: Path) -> None:
    user_turns = _bfcl_user_turns("live_irrelevance")
    assert len(user_turns) == 884
    workload = DatasetWorkload(path="bfcl:live_irrelevance", output_tokens=7, seed=1)
    requests = make_requests(workload, 6, tiny_tokenizer_dir)
    assert all(str(r.prompt) in user_turns for r in requests)
    assert {r.max_tokens for r in requests} == {7}
    assert all(r.input_tokens > 0 for r in requests)
    assert requests == make_requests(workload, 6, tiny_tokenizer_dir)  # the seeded order
    short = make_requests(DatasetWorkload(path="bfcl:live_irrelevance", output_tokens=7, max_input_tokens=12), 20,
                          tiny_tokenizer_dir)
    assert all(r.input_tokens <= 12 for r in short)


def test_a_bfcl_source_is_reused_cyclically(tiny_tokenizer_dir: Path) -> None:
    user_turns = _bfcl_user_turns("live_relevance")  # 16 rows
    requests = make_requests(DatasetWorkload(path="bfcl:live_relevance", output_tokens=3), len(user_turns) + 4,
                             tiny_tokenizer_dir)
    assert sorted(str(r.prompt) for r in requests[:len(user_turns)]) == sorted(user_turns)
    assert [r.prompt for r in requests[len(user_turns):]] == [r.prompt for r in requests[:4]]


def test_a_bfcl_source_without_output_tokens_is_refused() -> None:
    with pytest.raises(ValidationError, match="have no reply.*set output_tokens"):
        DatasetWorkload(path="bfcl:live_irrelevance")


def test_an_unknown_bfcl_category_or_a_missing_wheel_is_a_config_error(tiny_tokenizer_dir: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="no category 'nope'") as unknown:
        make_requests(DatasetWorkload(path="bfcl:nope", output_tokens=8), 1, tiny_tokenizer_dir)
    assert "bfcl:live_irrelevance" in unknown.value.fix and "bfcl:simple_python" in unknown.value.fix
    with pytest.raises(ConfigError, match="no category '../BFCL_v4_simple_python'"):  # never a path outside data/
        make_requests(DatasetWorkload(path="bfcl:../BFCL_v4_simple_python", output_tokens=8), 1, tiny_tokenizer_dir)
    monkeypatch.setitem(sys.modules, "bfcl_eval", None)  # find_spec now answers "not installed"
    with pytest.raises(ConfigError, match="not installed") as missing:
        make_requests(DatasetWorkload(path="bfcl:simple_java", output_tokens=8), 1, tiny_tokenizer_dir)
    assert "pip install --no-deps bfcl-eval" in missing.value.fix


def test_the_label_names_the_bfcl_category() -> None:
    assert DatasetWorkload(path="bfcl:live_irrelevance", output_tokens=8).label == "dataset-bfcl-live_irrelevance"
    assert DatasetWorkload(path="data/chats.jsonl").label == "dataset-chats.jsonl"
    assert DatasetWorkload(path="someorg/sharegpt").label == "dataset-sharegpt"
