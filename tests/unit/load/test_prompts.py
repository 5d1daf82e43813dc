from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from harness.config import workloads
from harness.config.workloads import RandomWorkload, WorkloadBase, register_workload_model, workload_models
from harness.errors import ConfigError
from harness.load import prompts
from harness.load.prompts import (
    PlannedRequest,
    WorkloadKind,
    kind_of,
    make_requests,
    workload_kind_names,
)

WORDS = 40


@pytest.fixture
def tokenizer_dir(tmp_path: Path) -> Path:
    """A word-level tokenizer: ids 1..40 are words; [UNK] (0), <s>, </s> special; <tool> added."""
    vocab = {"[UNK]": 0, **{f"w{i}": i + 1 for i in range(WORDS)}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.add_special_tokens(["[UNK]", "<s>", "</s>"])
    tokenizer.add_tokens(["<tool>"])
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    return tmp_path


def _workload(**overrides: object) -> RandomWorkload:
    fields: dict[str, object] = dict(input_tokens=20, output_tokens=8, range_ratio=0.5, seed=7)
    fields.update(overrides)
    return RandomWorkload(**fields)  # type: ignore[arg-type]


def test_requests_are_deterministic_and_independent_of_count(tokenizer_dir: Path) -> None:
    workload = _workload()
    first = make_requests(workload, 6, tokenizer_dir)
    assert first == make_requests(workload, 6, tokenizer_dir)
    assert make_requests(workload, 2, tokenizer_dir, offset=4) == first[4:]
    assert [r.index for r in first] == list(range(6))
    assert make_requests(_workload(seed=8), 6, tokenizer_dir) != first


def test_lengths_are_uniform_within_the_range(tokenizer_dir: Path) -> None:
    requests = make_requests(_workload(), 200, tokenizer_dir)
    inputs = {r.input_tokens for r in requests}
    outputs = {r.max_tokens for r in requests}
    assert min(inputs) >= 10 and max(inputs) <= 30 and len(inputs) > 10
    assert min(outputs) >= 4 and max(outputs) <= 12 and len(outputs) > 5
    assert all(len(r.prompt) == r.input_tokens for r in requests)
    exact = make_requests(_workload(range_ratio=0.0), 20, tokenizer_dir)
    assert {(r.input_tokens, r.max_tokens) for r in exact} == {(20, 8)}


def test_token_ids_avoid_special_and_added_tokens(tokenizer_dir: Path) -> None:
    ids = {i for r in make_requests(_workload(), 100, tokenizer_dir) for i in r.prompt}
    assert ids <= set(range(1, WORDS + 1))
    assert len(ids) > WORDS // 2  # drawn over the whole vocabulary


def test_completions_send_ids_and_chat_sends_decoded_text(tokenizer_dir: Path) -> None:
    completion = make_requests(_workload(), 1, tokenizer_dir)[0]
    assert isinstance(completion.prompt, tuple) and completion.api == "completions"
    assert completion.ignore_eos and completion.temperature == 0.0
    chat = make_requests(_workload(api="chat"), 1, tokenizer_dir)[0]
    assert chat.api == "chat" and isinstance(chat.prompt, str)
    assert chat.prompt.split() == [f"w{i - 1}" for i in completion.prompt]


def test_chat_text_re_encodes_to_the_planned_length(tmp_path: Path) -> None:
    # Byte-level BPE merges and splits tokens when random ids are decoded and encoded again.
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    corpus = ["the expert router sends each token to two experts", "draft tokens are verified in one step"] * 20
    tokenizer.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>"]))
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    requests = make_requests(_workload(api="chat", input_tokens=40), 30, tmp_path)
    lengths = [len(tokenizer.encode(str(r.prompt), add_special_tokens=False).ids) for r in requests]
    assert sum(n == r.input_tokens for n, r in zip(lengths, requests, strict=True)) >= 25


def test_warmup_prompts_differ_from_measured(tokenizer_dir: Path) -> None:
    measured = make_requests(_workload(), 4, tokenizer_dir)
    warmup = make_requests(_workload(), 4, tokenizer_dir, warmup=True)
    assert all(w.warmup for w in warmup) and not any(m.warmup for m in measured)
    assert [w.prompt for w in warmup] != [m.prompt for m in measured]


def test_missing_tokenizer_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="remote model ids"):
        make_requests(_workload(), 1, None)
    with pytest.raises(ConfigError, match="no tokenizer.json"):
        make_requests(_workload(), 1, tmp_path)


def test_unknown_kind_names_the_known_ones(tokenizer_dir: Path) -> None:
    bogus = RandomWorkload.model_construct(kind="bogus", input_tokens=1, output_tokens=1)
    with pytest.raises(ConfigError, match="random"):
        make_requests(bogus, 1, tokenizer_dir)


def test_every_workload_kind_has_an_importable_maker() -> None:
    kinds = {model.model_fields["kind"].default for model in workload_models()}
    assert set(workload_kind_names()) == kinds
    for model in workload_models():
        assert kind_of(model.model_construct(kind=model.model_fields["kind"].default)).model is model


# --- the registry ------------------------------------------------------------------------------------------------


@pytest.fixture
def scratch_registries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kinds a test registers are gone after it (the built-ins are loaded first, so they stay)."""
    monkeypatch.setattr(prompts.WORKLOAD_KINDS, "_added", {})
    monkeypatch.setattr(workloads._KINDS, "_members", dict(workloads._KINDS._members))


class _Fixed(WorkloadBase):
    kind: Literal["fixed"] = "fixed"
    text: str = "hello there"


def _fixed_kind(name: str = "fixed") -> type[WorkloadKind[_Fixed]]:
    class FixedKind(WorkloadKind[_Fixed]):
        model = _Fixed

        def requests(self, count: int, tokenizer_dir: Path | None, offset: int,
                     warmup: bool) -> list[PlannedRequest]:
            return [PlannedRequest(index=i, warmup=warmup, api="chat", prompt=self.workload.text, input_tokens=2,
                                   max_tokens=3) for i in range(offset, offset + count)]

    FixedKind.name = name
    return FixedKind


@pytest.mark.usefixtures("scratch_registries")
def test_a_kind_from_outside_plans_its_own_requests() -> None:
    register_workload_model(_Fixed)
    fixed = prompts.WORKLOAD_KINDS.register(_fixed_kind())
    assert fixed.name == "fixed" and "fixed" in workload_kind_names()
    requests = make_requests(_Fixed(text="hi"), 2, None, offset=5)
    assert [(r.index, r.prompt) for r in requests] == [(5, "hi"), (6, "hi")]
    kind = kind_of(_Fixed())
    assert kind.countable and not kind.own_timing and kind.report_shape is None  # independent requests
    assert kind.plan_bound(4) == "4 requests"


@pytest.mark.usefixtures("scratch_registries")
def test_a_taken_name_is_refused() -> None:
    with pytest.raises(ValueError, match="'random' is already registered by harness.load.random_prompts:RandomKind"):
        prompts.WORKLOAD_KINDS.register(_fixed_kind("random"))
    with pytest.raises(ValueError, match="'random' is already registered by harness.config.workloads"):
        register_workload_model(RandomWorkload)


@pytest.mark.usefixtures("scratch_registries")
def test_a_kind_needs_its_registered_config_model() -> None:
    with pytest.raises(TypeError, match="register_workload_model"):
        prompts.WORKLOAD_KINDS.register(_fixed_kind())  # _Fixed is not registered
    register_workload_model(_Fixed)
    with pytest.raises(TypeError, match="must declare as `model`"):
        prompts.WORKLOAD_KINDS.register(_fixed_kind("other"))  # _Fixed is the model of "fixed", not "other"


def test_an_unknown_kind_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="no workload kind 'bogus'") as info:
        kind_of(WorkloadBase.model_construct(kind="bogus"))
    assert all(name in info.value.fix for name in ("agent", "dataset", "random", "shared-prefix", "tool-calls",
                                                   "trace"))
