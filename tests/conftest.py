"""Shared pytest fixtures: small matrices written to a temp dir, a tiny tokenizer. Plain helpers and data shared
by several test modules live in ``tests/support/``."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest


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
