"""Shared fixtures: small matrices written to a temp dir."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

BASE_MATRIX = """
name: t
models:
  m: {id: "fixture:tiny-qwen3-moe"}
workloads:
  w: {kind: random, input_tokens: 16, output_tokens: 8, num_requests: 4, warmup_requests: 1}
axes:
  concurrency: [1, 2]
"""


@pytest.fixture
def write_matrix(tmp_path: Path) -> Callable[[str], Path]:
    def write(text: str, name: str = "matrix.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write


@pytest.fixture(scope="session")
def tiny_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model directory holding only a small word-level tokenizer.json (no downloads, no fixture build)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0, "<|im_end|>": 1, **{f"w{i}": i + 2 for i in range(254)}}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.add_special_tokens(["<unk>", "<|im_end|>"])
    path = tmp_path_factory.mktemp("tiny-model")
    tokenizer.save(str(path / "tokenizer.json"))
    return path


def live_pids(*needles: str) -> list[int]:
    """PIDs of live (non-zombie) processes whose argv contains every needle as a whole argument.

    Lifecycle tests assert this is empty after a run: no server may outlive the harness.
    """
    wanted = [n.encode() for n in needles]
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            zombie = (proc / "stat").read_text().split()[2] == "Z"
        except OSError:
            continue  # exited while we looked
        if not zombie and all(n in argv for n in wanted):
            pids.append(int(proc.name))
    return pids
