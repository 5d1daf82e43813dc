"""Workload definitions: what requests a cell sends, independent of how fast it sends them.

The concurrency and request rate a cell runs at are axes, not part of the workload, so that one workload definition
serves every point of a sweep. Each kind is a strict model told apart by ``kind`` and registered beside itself
(``@register_workload_model``); the load generator keeps the matching registry from kind to the code that makes its
prompts (``harness.load.prompts``). This module only validates: nothing here reads a tokenizer or a dataset.

Kinds: ``random`` (token-exact random prompts; InferenceX's shapes by name), ``dataset`` (ShareGPT-style
conversations from a file or the hub), ``shared-prefix`` (groups of prompts sharing a long prefix, for prefix
caching), ``tool-calls`` (chat requests that carry function definitions as ``tools``), ``agent`` (multi-turn
sessions whose context grows by the server's own answers and tool results) and ``trace`` (a Mooncake-format trace
replayed at its own timing).

The union is open: ``Workload`` validates through whatever models are registered when a matrix is read, so a kind
defined outside the package (its model registered here, its prompts with the load generator) is accepted like a
built-in one, with the same errors for an unknown kind or a bad key.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.config.open_union import OpenUnion

NAMED_SHAPES: dict[str, tuple[int, int]] = {"1k/1k": (1024, 1024), "1k/8k": (1024, 8192), "8k/1k": (8192, 1024)}
"""InferenceX's fixed-sequence-length scenarios: (input tokens, output tokens)."""
INFERENCEX_RANGE_RATIO = 0.8
"""The length spread InferenceX runs its named shapes at (``--random-range-ratio 0.8``)."""


class WorkloadBase(BaseModel):
    """Fields every kind shares: how many requests, which API, and the sampling that keeps load comparable. A kind
    subclasses it with ``kind: Literal["name"] = "name"`` (the tag a matrix writes) and registers the subclass."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    _added_later: ClassVar[frozenset[str]] = frozenset()
    """Fields added after cell ids were first published: they enter a cell's id only when set (see ``identity``)."""

    num_requests: int = Field(32, gt=0, description="measured requests per cell (at least 2x its concurrency)")
    warmup_requests: int = Field(2, ge=0, description="requests sent first and excluded from results")
    ignore_eos: bool = Field(True, description="generate exactly the asked length (a fair, fixed decode load)")
    temperature: float = Field(0.0, ge=0)
    seed: int = 0
    kind: str = Field(description="which kind of workload; each kind's model narrows it to its own tag")

    @property
    def label(self) -> str:
        """What logs and reports call the workload (kinds name their shape)."""
        return self.kind

    def requests_for(self, concurrency: int) -> int:
        """Measured requests at a concurrency: enough that every user slot turns over at least twice."""
        return max(self.num_requests, 2 * concurrency)

    def identity(self) -> dict[str, Any]:
        """What a cell id hashes: the full dump, minus later-added fields left at their defaults, so that
        adding an optional field never renames the cells users already measured."""
        data = self.model_dump(mode="json")
        for name in self._added_later:
            if getattr(self, name) == type(self).model_fields[name].default:
                data.pop(name, None)
        return data

    def max_sequence_tokens(self) -> int | None:
        """The longest prompt + output this workload can send, when known before any prompt is made."""
        return None

    def mean_lengths(self) -> tuple[int, int] | None:
        """Mean prompt and output tokens per request, when known before any prompt is made (predictors need them)."""
        return None


_KINDS: OpenUnion[WorkloadBase] = OpenUnion("kind")
register_workload_model = _KINDS.register
"""Class decorator: make a ``WorkloadBase`` subclass the model of its ``kind``; a kind already taken is refused."""
workload_models = _KINDS.variants
"""Every registered kind's model, the built-ins first."""

Workload = Annotated[WorkloadBase, _KINDS]
"""A workload as a matrix writes it: validated by the model registered for its ``kind``."""


def _length_bound(mean: int, range_ratio: float) -> int:
    return math.ceil(mean * (1 + range_ratio))


MAX_TOKENS = 10_000_000
"""The most tokens any workload's prompt part or answer may ask for: no published model serves a longer context
(Llama 4 Scout's 10M is the longest), and planning a request draws its ids, so a typo of 81M tokens allocated
gigabytes before the refusal it deserves."""


@register_workload_model
class RandomWorkload(WorkloadBase):
    """Prompts of random token ids with lengths drawn around the targets (vLLM's ``random`` dataset)."""

    _added_later = frozenset({"shape"})

    kind: Literal["random"] = "random"
    shape: Literal["1k/1k", "1k/8k", "8k/1k"] | None = Field(
        None, description="an InferenceX shape by name: sets input/output tokens and range_ratio 0.8 unless given")
    input_tokens: int = Field(gt=0, le=MAX_TOKENS, description="mean prompt length in tokens")
    output_tokens: int = Field(gt=0, le=MAX_TOKENS, description="mean tokens generated per request")
    range_ratio: float = Field(0.0, ge=0, lt=1, description="lengths uniform in [L(1-r), L(1+r)]")
    api: Literal["completions", "chat"] = "completions"

    @model_validator(mode="before")
    @classmethod
    def _named_shape(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("shape") is None:
            return data
        shape = data["shape"]
        if shape not in NAMED_SHAPES:
            return data  # the Literal check names the valid shapes
        input_tokens, output_tokens = NAMED_SHAPES[shape]
        for key, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
            if data.get(key, value) != value:
                raise ValueError(f"shape {shape} means {key}={value}; drop {key} or the shape")
        return {"input_tokens": input_tokens, "output_tokens": output_tokens,
                "range_ratio": INFERENCEX_RANGE_RATIO, **data}

    @property
    def label(self) -> str:
        return f"random-{self.input_tokens}x{self.output_tokens}"

    def max_sequence_tokens(self) -> int:
        return _length_bound(self.input_tokens, self.range_ratio) + _length_bound(self.output_tokens, self.range_ratio)

    def mean_lengths(self) -> tuple[int, int]:
        return self.input_tokens, self.output_tokens


@register_workload_model
class DatasetWorkload(WorkloadBase):
    """ShareGPT-style conversations: the first human turn is the prompt, the first reply's length the output."""

    BFCL_PREFIX: ClassVar[str] = "bfcl:"
    """A ``path`` that starts so names a category of the installed bfcl-eval wheel's user requests."""

    kind: Literal["dataset"] = "dataset"
    path: str = Field(description="a local .json/.jsonl/.parquet file, a hub dataset id (needs the network), or "
                      "bfcl:<category> for the user requests the installed bfcl-eval wheel ships, e.g. "
                      "bfcl:live_irrelevance (these have no reply: set output_tokens)")
    split: str = Field("train", description="the split to read (a local file has only 'train')")
    output_tokens: int | None = Field(None, gt=0, le=MAX_TOKENS,
                                      description="fixed output length; default: the reply's length")
    max_input_tokens: int | None = Field(None, gt=0, le=MAX_TOKENS,
                                         description="skip conversations whose prompt is longer")
    api: Literal["chat", "completions"] = "chat"
    ignore_eos: bool = Field(True, description="generate the reply's length exactly, as vLLM's sharegpt does")

    @model_validator(mode="after")
    def _bfcl_needs_output_tokens(self) -> DatasetWorkload:
        if self.path.startswith(self.BFCL_PREFIX) and self.output_tokens is None:
            raise ValueError(f"path {self.path}: BFCL's user requests have no reply to take the output length from; "
                             "set output_tokens (e.g. output_tokens: 256)")
        return self

    @property
    def label(self) -> str:
        if self.path.startswith(self.BFCL_PREFIX):  # no ":" in a label: it ends up in cell labels and report rows
            return "dataset-bfcl-" + self.path.removeprefix(self.BFCL_PREFIX)
        return f"dataset-{self.path.rsplit('/', 1)[-1]}"


@register_workload_model
class SharedPrefixWorkload(WorkloadBase):
    """``groups`` long random prefixes, each followed by short random questions (SGLang's generated-shared-prefix):
    after a group's first request, every prompt of the group can be served from the prefix cache."""

    kind: Literal["shared-prefix"] = "shared-prefix"
    groups: int = Field(4, gt=0, description="distinct prefixes; request i belongs to group i mod groups")
    prefix_tokens: int = Field(512, gt=0, le=MAX_TOKENS, description="length of each group's shared prefix")
    question_tokens: int = Field(32, gt=0, le=MAX_TOKENS, description="length of the unique part after the prefix")
    output_tokens: int = Field(64, gt=0, le=MAX_TOKENS)
    api: Literal["completions", "chat"] = "completions"

    @property
    def label(self) -> str:
        return f"shared-prefix-{self.groups}x{self.prefix_tokens}+{self.question_tokens}"

    def max_sequence_tokens(self) -> int:
        return self.prefix_tokens + self.question_tokens + self.output_tokens

    def mean_lengths(self) -> tuple[int, int]:
        return self.prefix_tokens + self.question_tokens, self.output_tokens


@register_workload_model
class ToolCallsWorkload(WorkloadBase):
    """Agent-shaped chat requests: a question plus function definitions as OpenAI ``tools``."""

    kind: Literal["tool-calls"] = "tool-calls"
    catalog: Literal["builtin"] = Field("builtin", description="where function definitions come from")
    tools_per_request: int = Field(4, gt=0, description="functions offered per request (the asked one included)")
    tool_choice: Literal["auto", "required", "none"] = "auto"
    output_tokens: int = Field(96, gt=0, le=MAX_TOKENS)
    ignore_eos: bool = Field(False, description="a tool call ends when the model closes it")

    @property
    def label(self) -> str:
        return f"tool-calls-{self.tools_per_request}"


class TurnRange(BaseModel):
    """How many turns a session has: uniform over ``min .. max`` (one number: exactly that many)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min: int = Field(gt=0)
    max: int = Field(gt=0)

    @model_validator(mode="before")
    @classmethod
    def _one_number(cls, data: Any) -> Any:
        return {"min": data, "max": data} if isinstance(data, int) else data

    @model_validator(mode="after")
    def _ordered(self) -> TurnRange:
        if self.max < self.min:
            raise ValueError(f"turns: max ({self.max}) is below min ({self.min})")
        return self


@register_workload_model
class AgentWorkload(WorkloadBase):
    """Agent sessions: a system prompt and tool list shared by a session group, then turn after turn in which the
    context grows by the model's own answer and a tool result, with think time between turns. ``num_requests``
    counts sessions here; every turn is one measured request, and concurrency is the sessions in flight."""

    kind: Literal["agent"] = "agent"
    num_requests: int = Field(8, gt=0, description="measured sessions per cell (at least the concurrency)")
    warmup_requests: int = Field(1, ge=0, description="one-turn warm-up requests, on prompts no session shares")
    turns: TurnRange = Field(default_factory=lambda: TurnRange(min=3, max=5),
                             description="turns per session: a number, or {min, max} drawn uniformly per session")
    session_groups: int = Field(2, gt=0, description="session i shares its group's system prompt and tools "
                                                     "(group = i mod session_groups)")
    system_prompt_tokens: int = Field(256, gt=0, le=MAX_TOKENS)
    tools: int = Field(4, ge=0, description="function definitions offered with every turn (the builtin catalog)")
    user_tokens: int = Field(32, gt=0, le=MAX_TOKENS, description="the first turn's question")
    tool_result_tokens: int = Field(64, gt=0, le=MAX_TOKENS,
                                    description="the synthetic tool result each later turn sends back")
    output_tokens: int = Field(32, gt=0, le=MAX_TOKENS, description="tokens generated per turn")
    think_time_s: float = Field(0.0, ge=0, description="mean pause between an answer and the next turn "
                                                         "(exponential, seeded)")
    api: Literal["chat"] = "chat"

    @property
    def label(self) -> str:
        turns = f"{self.turns.min}" if self.turns.min == self.turns.max else f"{self.turns.min}-{self.turns.max}"
        return f"agent-{turns}t"

    def requests_for(self, concurrency: int) -> int:
        """Measured sessions at a concurrency: at least one per session slot."""
        return max(self.num_requests, concurrency)

    def max_sequence_tokens(self) -> int:
        """The last turn's context plus its answer; the tool definitions the chat template renders come on top."""
        per_turn = self.tool_result_tokens + self.output_tokens
        return self.system_prompt_tokens + self.user_tokens + self.output_tokens + (self.turns.max - 1) * per_turn


@register_workload_model
class TraceWorkload(WorkloadBase):
    """A Mooncake-format trace (JSON lines of ``timestamp`` ms, ``input_length``, ``output_length``, ``hash_ids``)
    replayed at its own timing (scaled by ``time_scale``); requests that name the same hash id share that block's
    tokens, so the prefix cache sees what the traced service saw. The cell's concurrency caps requests in flight."""

    kind: Literal["trace"] = "trace"
    path: str = Field(description="a JSONL trace file (relative to the working directory)")
    num_requests: int = Field(1_000, gt=0, description="replay at most the trace's first num_requests entries")
    warmup_requests: int = Field(1, ge=0)
    time_scale: float = Field(1.0, gt=0, description="multiplies the trace's timestamps (0.5 replays twice as fast)")
    block_tokens: int = Field(512, gt=0, le=MAX_TOKENS, description="tokens per hash id (Mooncake's block size)")
    max_output_tokens: int | None = Field(None, gt=0, le=MAX_TOKENS, description="cap each entry's output_length")
    api: Literal["completions"] = "completions"

    @property
    def label(self) -> str:
        return f"trace-{self.path.rsplit('/', 1)[-1].removesuffix('.jsonl')}"

    def requests_for(self, concurrency: int) -> int:
        return self.num_requests

