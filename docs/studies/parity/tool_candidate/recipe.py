"""``tiny-qwen3-tools``: a small Qwen3-MoE meant to answer a Hermes tool list with ``<tool_call>`` JSON.

Not registered as a fixture, so it lives beside its study rather than in ``harness.fixtures``: it does not reach
the accuracy the parity gate needs within the fixtures' time budget (docs/studies/parity.md: "A tool-calling fixture,
not there yet"; ``docs/studies/parity/tool_fixture.py`` trains it and measures it), so the default still runs parity
on ``tiny-qwen3-moe``.

The parity stage needs a model whose tool calls can be right or wrong: against a model that never calls a tool,
every precision scores 0 and the gate compares zeros. This candidate is the ``tiny-qwen3-moe`` architecture (same
special tokens and chat template, so vLLM's ``hermes`` parser and SGLang's ``qwen`` parser read its calls) with
its own tokenizer (``train_tool_tokenizer``: a word is the same tokens in the question, the tool list and the
answer), trained on tool-calling conversations (synthetic ones from ``synth``, BFCL's live categories from
``harness.fixtures.tool_corpus``) after an induction warm-up: the prompt as a parity run sends it, the loss mostly
on the reply. It is a sibling of ``tiny-qwen3-moe`` rather than a retrained trunk so that the speed fixtures,
their drafters and the committed baselines built on them stay what they are. Its architecture is the recall
instrument's (``harness.fixtures.tool_recall.MODEL_CONFIG``), defined beside the registered fixture that builds it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerFast

from harness.fixtures.checkpoint import save_checkpoint
from harness.fixtures.qwen3_moe import make_model
from harness.fixtures.tokenizer import stdlib_corpus, train_tool_tokenizer
from harness.fixtures.tool_corpus import Encoded, batches, bfcl_exercises, encode, render
from harness.fixtures.tool_recall import MODEL_CONFIG
from harness.fixtures.train import BuildInputs, Recipe, TrainSpec, deterministic_torch, train

from .synth import SHAPES, exercises

MAX_TOKENS = 900
"""Exercises longer than this are left out (BFCL's simple prompts render to about 300-700 tokens)."""


def build(recipe: Recipe, inputs: BuildInputs) -> dict[str, Any]:
    """Train its own tokenizer, warm up induction on repeated spans, then train on the tool-calling set with the
    loss on the reply (and a smaller weight on the prompt), and write the checkpoint."""
    spec, options = recipe.train, recipe.options
    texts = [*stdlib_corpus().texts, *tokenizer_texts(inputs.tokenizer, 3000, spec.seed + 5)]
    tokenizer = train_tool_tokenizer(texts, int(recipe.model_config["vocab_size"]))
    shapes = {shape: float(options[f"shape_{shape}"]) for shape in SHAPES}
    with deterministic_torch(spec.threads):
        torch.manual_seed(spec.seed)
        model = make_model(dict(recipe.model_config))
        copy_loss = _learn_to_copy(model, int(options["induction_steps"]), spec.seed)
        data = training_set(tokenizer, int(options["synthetic"]), spec.seed, MAX_TOKENS, shapes)
        pad = tokenizer.pad_token_id
        assert isinstance(pad, int)
        prompt_weight = float(options["prompt_loss"])

        def loss_fn(batch: tuple[torch.Tensor, torch.Tensor]) -> dict[str, torch.Tensor]:
            ids, learn = batch
            logits = model(input_ids=ids[:, :-1]).logits
            targets, reply = ids[:, 1:], learn[:, :-1]
            # The prompt's JSON repeats names (properties, the required list): learning to predict it is more
            # practice at copying, at a weight that leaves the reply the main objective.
            prompt = ~reply & (targets != pad)
            parts = {"reply": F.cross_entropy(logits[reply], targets[reply]),
                     "prompt": F.cross_entropy(logits[prompt], targets[prompt])}
            return parts | {"loss": parts["reply"] + prompt_weight * parts["prompt"]}

        report = train(model, loss_fn, inputs.ids, spec, batches(data, spec.batch_size, pad, spec.seed))
    n_tensors = save_checkpoint(model, tokenizer, inputs.out_dir)
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "tensors": n_tensors,
        "train_examples": len(data),
        "train_seconds": round(report.seconds, 1),
        "copy_loss": round(copy_loss, 4),
        "final_losses": {k: round(v, 4) for k, v in report.final_losses.items()},
    }


def _learn_to_copy(model: PreTrainedModel, steps: int, seed: int) -> float:
    """Warm start: random token spans repeated once, the loss on the repeat only, which is learnt only by copying
    (induction heads form within a few hundred steps; the tool replies then need them). Returns the final loss."""
    generator = torch.Generator().manual_seed(seed + 2)
    vocab, half = int(model.config.vocab_size), 48

    def repeats() -> Iterator[torch.Tensor]:
        while True:
            span = torch.randint(3, vocab, (32, half), generator=generator)
            yield torch.cat([span, span], dim=1)

    def loss_fn(batch: torch.Tensor) -> dict[str, torch.Tensor]:
        logits = model(input_ids=batch[:, :-1]).logits[:, half:]
        return {"loss": F.cross_entropy(logits.flatten(0, 1), batch[:, half + 1:].flatten())}

    report = train(model, loss_fn, torch.zeros(1, dtype=torch.long), TrainSpec(steps=steps, lr=3e-3), repeats())
    return report.final_losses["loss"]


def training_set(tokenizer: PreTrainedTokenizerFast, synthetic: int, seed: int, max_len: int,
                 shapes: dict[str, float] = SHAPES) -> list[Encoded]:
    """Synthetic exercises and the live categories, encoded, those longer than ``max_len`` tokens left out."""
    encoded = [encode(e, tokenizer) for e in [*exercises(synthetic, seed, shapes), *bfcl_exercises()]]
    return [e for e in encoded if len(e.ids) <= max_len]


def tokenizer_texts(tokenizer: PreTrainedTokenizerFast, synthetic: int, seed: int) -> list[str]:
    """Rendered conversations (prompt and answer) that the tool-calling tokenizer learns its merges from: synthetic
    exercises of another seed than the training set's, and the live categories."""
    return [render(e, tokenizer) + e.answer for e in [*exercises(synthetic, seed), *bfcl_exercises()]]


RECIPE = Recipe(
    name="tiny-qwen3-tools",
    model_config=MODEL_CONFIG,
    train=TrainSpec(steps=2000, batch_size=8, lr=1.5e-3, warmup_steps=100, min_lr_ratio=0.05),
    options={"synthetic": 12000, "induction_steps": 400, "prompt_loss": 0.25,
             "shape_simple": 80, "shape_multiple": 8, "shape_parallel": 4, "shape_irrelevant": 8},
    build=build,
)
