"""A model's tokenizer as prompt makers need it: the ordinary token ids to draw from, and text of exact length.

Random, shared-prefix and tool-call prompts are made of the served model's own tokens, so that a prompt of n
planned tokens is n tokens on the server. Special and added tokens are never drawn: they would change the model's
behaviour (an end-of-sequence token in a prompt, a chat-template marker). Loaded once per tokenizer file.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from harness.errors import ConfigError

_LENGTH_ROUNDS = 10


@dataclass(frozen=True, slots=True)
class Vocabulary:
    tokenizer: Tokenizer
    ordinary_ids: np.ndarray
    """Every id of the tokenizer that is neither special nor added."""

    def random_ids(self, rng: np.random.Generator, count: int) -> tuple[int, ...]:
        return tuple(self.ordinary_ids[rng.integers(0, self.ordinary_ids.size, size=count)].tolist())

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def text_of_length(self, rng: np.random.Generator, ids: tuple[int, ...]) -> str:
        """Text that re-encodes to ``len(ids)`` tokens, as near as a few rounds get it (vLLM's random dataset does
        the same): decoding random ids and encoding the text again merges or splits tokens. A chat template still
        adds its own tokens; the server's ``usage.prompt_tokens`` is the truth for chat."""
        target, current = len(ids), list(ids)
        text = self.tokenizer.decode(current, skip_special_tokens=False)
        for _ in range(_LENGTH_ROUNDS):
            current = self.tokenizer.encode(text, add_special_tokens=False).ids
            if len(current) == target:
                break
            if len(current) > target:
                current = current[:target]
            else:
                current += self.random_ids(rng, target - len(current))
            text = self.tokenizer.decode(current, skip_special_tokens=False)
        return text


def load_vocabulary(tokenizer_dir: Path | None) -> Vocabulary:
    """The vocabulary of the model directory's ``tokenizer.json``; a ConfigError says how to get one."""
    if tokenizer_dir is None:
        raise ConfigError(
            "model", "id", "prompts need the model's tokenizer.json on disk; remote model ids are not "
            "supported yet", "point the model at a local directory (or a fixture model) that holds tokenizer.json",
        )
    file = Path(tokenizer_dir) / "tokenizer.json"
    if not file.is_file():
        raise ConfigError(str(tokenizer_dir), "tokenizer.json", "no tokenizer.json in the model directory",
                          "use a model directory saved with its tokenizer (save_pretrained)")
    return _load(str(file.resolve()), file.stat().st_mtime_ns)


@lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int) -> Vocabulary:  # mtime in the key: a rebuilt tokenizer is read again
    tokenizer = Tokenizer.from_file(path)
    added = set(tokenizer.get_added_tokens_decoder())
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    ordinary = np.array([i for i in range(size) if i not in added and tokenizer.id_to_token(i) is not None])
    if ordinary.size == 0:
        raise ConfigError(path, "", "the tokenizer has no ordinary (non-special) tokens", "check the model")
    return Vocabulary(tokenizer, ordinary)
