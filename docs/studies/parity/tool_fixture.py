"""Train the candidate tool-calling fixture (``docs/studies/parity/tool_candidate/recipe.py``) and measure what it
learnt.

Usage: ``.venv/bin/python docs/studies/parity/tool_fixture.py [--steps N] [--sample N] [--keep DIR]`` (about 20 minutes
on 2 cores at the recipe's settings). It builds the recipe into a temporary folder exactly as ``harness fixtures``
would, then decodes greedily with transformers (no server: this measures the weights, not the engine) and prints

- exact replies on held-out synthetic exercises (another seed than the training set's): can it copy at all;
- BFCL ``simple_python`` accuracy on a seeded sample, by BFCL's own AST checker, and the same for the weights
  rounded to int4 (``harness/fixtures/rounded.py``), the degraded recipe the parity gate must catch.

docs/studies/parity.md ("A tool-calling fixture, not there yet") quotes its output.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import tempfile
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

from harness.bfcl.tools import to_tools
from harness.fixtures.rounded import KEEP, round_to_nearest
from harness.fixtures.tokenizer import IM_END, encode_corpus, stdlib_corpus, train_tokenizer
from harness.fixtures.tool_corpus import encode
from harness.fixtures.train import BuildInputs
from harness.parity.bfcl_data import load_items
from harness.parity.decoding import Decoded
from harness.parity.scoring import check

from tool_candidate.recipe import RECIPE  # beside this script: its directory is the first on sys.path
from tool_candidate.synth import exercises

CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)


def reply(model: AutoModelForCausalLM, tokenizer: PreTrainedTokenizerFast, ids: list[int]) -> str:
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=128, do_sample=False,
                             eos_token_id=tokenizer.convert_tokens_to_ids(IM_END), pad_token_id=tokenizer.pad_token_id)
    return str(tokenizer.decode(out[0, len(ids):], skip_special_tokens=False)).replace(IM_END, "").strip()


def bfcl_accuracy(model: AutoModelForCausalLM, tokenizer: PreTrainedTokenizerFast, sample: int) -> tuple[int, int]:
    right = 0
    items = load_items(["simple_python"], limit=sample, seed=0)
    for item in items:
        tools = to_tools(item.prompt_functions)
        prompt = tokenizer.apply_chat_template([dict(m) for m in item.messages], tools=[dict(t) for t in tools.tools],
                                               add_generation_prompt=True, tokenize=False)
        text = reply(model, tokenizer, tokenizer(prompt, add_special_tokens=False)["input_ids"])
        calls = []
        for found in CALL.findall(text):
            try:
                call = json.loads(found)
                calls.append({tools.name_map.get(call["name"], call["name"]): call["arguments"]})
            except (ValueError, KeyError, TypeError):
                calls = []
                break
        right += check(item, Decoded(calls=tuple(calls))).correct
    return right, len(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=RECIPE.train.steps)
    parser.add_argument("--sample", type=int, default=100, help="simple_python items to score (400: all of them)")
    parser.add_argument("--keep", type=Path, help="also write the built checkpoint here (to serve it with vLLM)")
    args = parser.parse_args()
    recipe = dataclasses.replace(RECIPE, train=dataclasses.replace(RECIPE.train, steps=args.steps))
    corpus = stdlib_corpus()
    tokenizer = train_tokenizer(corpus)
    ids = torch.tensor(encode_corpus(tokenizer, corpus), dtype=torch.long)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        facts = recipe.build(recipe, BuildInputs(Path(tmp), tokenizer, ids))
        print(f"built in {time.perf_counter() - started:.0f} s: {facts}")
        model = AutoModelForCausalLM.from_pretrained(tmp, dtype=torch.float32).eval()
        # the fixture trains its own tokenizer; the shared one only renders the texts it learns merges from
        tokenizer = AutoTokenizer.from_pretrained(tmp)
        if args.keep:
            shutil.copytree(tmp, args.keep, dirs_exist_ok=True)
    held_out = exercises(30, 99)
    exact = 0
    for exercise in held_out:
        encoded = encode(exercise, tokenizer)
        prompt = list(encoded.ids[:len(encoded.ids) - sum(encoded.learn)])
        exact += reply(model, tokenizer, prompt) == exercise.answer.strip()
    print(f"held-out synthetic exercises, exact reply: {exact}/{len(held_out)}")
    right, total = bfcl_accuracy(model, tokenizer, args.sample)
    print(f"BFCL simple_python (seeded sample), AST checker: {right}/{total}")
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.ndim >= 2 and not any(part in name for part in KEEP):
                param.copy_(round_to_nearest(param, 4))
    right, total = bfcl_accuracy(model, tokenizer, args.sample)
    print(f"the same weights rounded to int4: {right}/{total}")


if __name__ == "__main__":
    main()
