from __future__ import annotations

from pathlib import Path

from harness.config.workloads import SharedPrefixWorkload
from harness.load import PROMPT_BLOCK, make_requests


def _workload(**overrides: object) -> SharedPrefixWorkload:
    fields: dict[str, object] = dict(groups=3, prefix_tokens=40, question_tokens=6, output_tokens=5, seed=1)
    fields.update(overrides)
    return SharedPrefixWorkload(**fields)  # type: ignore[arg-type]


def test_requests_of_a_group_share_the_prefix_and_differ_after_it(tiny_tokenizer_dir: Path) -> None:
    requests = make_requests(_workload(), 12, tiny_tokenizer_dir)
    assert all(len(r.prompt) == r.input_tokens == 46 and r.max_tokens == 5 for r in requests)
    prefixes = [tuple(r.prompt[:40]) for r in requests]
    for i, prefix in enumerate(prefixes):
        assert prefix == prefixes[i % 3]  # group i mod 3
    assert len(set(prefixes)) == 3
    assert len({tuple(r.prompt[40:]) for r in requests}) == 12  # every question is its own


def test_prefixes_are_per_block_and_per_stream(tiny_tokenizer_dir: Path) -> None:
    workload = _workload()
    cell_a = {tuple(r.prompt[:40]) for r in make_requests(workload, 3, tiny_tokenizer_dir, offset=PROMPT_BLOCK)}
    cell_b = {tuple(r.prompt[:40]) for r in make_requests(workload, 3, tiny_tokenizer_dir, offset=2 * PROMPT_BLOCK)}
    warm = {tuple(r.prompt[:40]) for r in make_requests(workload, 3, tiny_tokenizer_dir, offset=PROMPT_BLOCK,
                                                        warmup=True)}
    assert len(cell_a) == 3 and not cell_a & cell_b and not cell_a & warm  # nothing pre-warms another cell
    # a later batch of the same block (a timed run plans in batches) keeps the block's prefixes
    later = {tuple(r.prompt[:40]) for r in make_requests(workload, 3, tiny_tokenizer_dir, offset=PROMPT_BLOCK + 30)}
    assert later == cell_a


def test_chat_text_keeps_the_prefix_text_identical(tiny_tokenizer_dir: Path) -> None:
    requests = make_requests(_workload(api="chat"), 6, tiny_tokenizer_dir)
    texts = [str(r.prompt) for r in requests]
    assert all(r.api == "chat" for r in requests)
    assert texts[0][:100] == texts[3][:100] and texts[0] != texts[3]
    assert texts[0][:100] != texts[1][:100]
