"""The ``agent`` workload's sessions: what each turn sends, given what the server answered before.

A session is planned up front (seeded by ``(workload.seed, session index)``): its group's system prompt and tool
list, its number of turns, its first question, the tool result each later turn sends back, and the think time
after each answer. What is not planned is the server's answer: turn ``t + 1`` carries the whole conversation so far,
the assistant's real output of turn ``t`` included, so an engine's prefix cache sees exactly what a real agent
sends (the conversation up to the last answer is a prefix of the next prompt). Tool results come back in a user
turn wrapped in ``<tool_response>``, as Qwen3's and Hermes' chat templates render a ``tool`` message, so no
``tool_call_id`` has to be invented when the model answered in prose.

Groups are keyed by the prompt block (``PROMPT_BLOCK``) as the shared-prefix kind's are: sessions of one cell share
their group's system prompt, another cell on the same server (another block) and the warm-up get their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.config.workloads import AgentWorkload
from harness.errors import ConfigError
from harness.load.prompts import PROMPT_BLOCK, PlannedRequest, WorkloadKind
from harness.load.tool_catalog import BUILTIN, to_openai_tool
from harness.load.vocabulary import Vocabulary, load_vocabulary

_GROUP_STREAM = 4
_SESSION_STREAM = 5


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """Everything about one session that does not depend on the server's answers."""

    index: int
    warmup: bool
    system: str
    tools: tuple[dict[str, Any], ...]
    question: str
    tool_results: tuple[str, ...]
    """What turn ``t + 1`` sends back after answer ``t``: one per turn after the first."""
    think_s: tuple[float, ...]
    """The pause after answer ``t`` before turn ``t + 1`` is sent."""
    planned_tokens: tuple[int, ...]
    """The planned prompt length of each turn, answers counted at ``output_tokens`` (the server's count rules)."""
    workload: AgentWorkload

    @property
    def turns(self) -> int:
        return 1 + len(self.tool_results)

    def first_messages(self) -> list[dict[str, Any]]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.question}]

    def follow_up(self, turn: int, answer: str) -> list[dict[str, Any]]:
        """The messages that turn ``turn`` (>= 1) appends: the previous answer as sent, then the tool result."""
        return [{"role": "assistant", "content": answer},
                {"role": "user", "content": f"<tool_response>\n{self.tool_results[turn - 1]}\n</tool_response>"}]

    def request(self, turn: int, messages: list[dict[str, Any]]) -> PlannedRequest:
        workload = self.workload
        return PlannedRequest(
            index=self.index, warmup=self.warmup, api="chat", prompt="", input_tokens=self.planned_tokens[turn],
            max_tokens=workload.output_tokens, temperature=workload.temperature, ignore_eos=workload.ignore_eos,
            tools=self.tools, messages=tuple(messages), session=self.index, turn=turn,
        )


def _text(vocab: Vocabulary, rng: np.random.Generator, tokens: int) -> str:
    return vocab.text_of_length(rng, vocab.random_ids(rng, tokens))


def _check_tools(workload: AgentWorkload) -> None:
    if workload.tools > len(BUILTIN):
        raise ConfigError("workload", "tools", f"the builtin catalog holds {len(BUILTIN)} functions, fewer than "
                          f"{workload.tools}", f"use tools <= {len(BUILTIN)}")


def plan_sessions(workload: AgentWorkload, count: int, tokenizer_dir: Path | None, offset: int = 0,
                  warmup: bool = False) -> list[SessionPlan]:
    """Sessions ``offset .. offset+count-1`` (the warm-up stream when ``warmup``)."""
    _check_tools(workload)
    vocab = load_vocabulary(tokenizer_dir)
    stream = 1 if warmup else 0
    groups: dict[tuple[int, int], tuple[str, tuple[dict[str, Any], ...]]] = {}
    sessions = []
    for index in range(offset, offset + count):
        key = (index // PROMPT_BLOCK, index % workload.session_groups)
        if key not in groups:
            group_rng = np.random.default_rng((workload.seed, _GROUP_STREAM, stream, *key))
            offered = group_rng.permutation(len(BUILTIN))[:workload.tools]
            groups[key] = (_text(vocab, group_rng, workload.system_prompt_tokens),
                           tuple(to_openai_tool(BUILTIN[int(i)].function) for i in offered))
        system, tools = groups[key]
        rng = np.random.default_rng((workload.seed, _SESSION_STREAM, stream, index))
        turns = 1 if warmup else int(rng.integers(workload.turns.min, workload.turns.max + 1))
        question = _text(vocab, rng, workload.user_tokens)
        results = tuple(_text(vocab, rng, workload.tool_result_tokens) for _ in range(turns - 1))
        think = tuple(float(t) for t in rng.exponential(workload.think_time_s, size=turns - 1)) \
            if workload.think_time_s > 0 else (0.0,) * (turns - 1)
        first = workload.system_prompt_tokens + workload.user_tokens
        grown = workload.output_tokens + workload.tool_result_tokens
        sessions.append(SessionPlan(index=index, warmup=warmup, system=system, tools=tools, question=question,
                                    tool_results=results, think_s=think,
                                    planned_tokens=tuple(first + t * grown for t in range(turns)), workload=workload))
    return sessions


def agent_warmup_requests(
    workload: AgentWorkload, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool
) -> list[PlannedRequest]:
    """The first turns of sessions ``offset ..``: what a request of this workload is before any answer exists
    (the warm-up sends these; the measured phase runs whole sessions through ``plan_sessions``)."""
    return [session.request(0, session.first_messages())
            for session in plan_sessions(workload, count, tokenizer_dir, offset, warmup)]


class AgentKind(WorkloadKind[AgentWorkload]):
    """Sessions, not requests: the measured unit is a whole session (concurrency counts sessions in flight, a request
    rate starts sessions), and the warm-up sends first turns only. The report shows its cells turn by turn."""

    name = "agent"
    model = AgentWorkload
    countable = False
    report_shape = "sessions"

    def requests(self, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool) -> list[PlannedRequest]:
        return agent_warmup_requests(self.workload, count, tokenizer_dir, offset, warmup)

    def measured_work(self, count: int, tokenizer_dir: Path | None, offset: int) -> list[SessionPlan]:
        return plan_sessions(self.workload, count, tokenizer_dir, offset=offset)

    def plan_bound(self, count: int) -> str:
        return f"{count} sessions of {self.workload.turns.min}-{self.workload.turns.max} turns"

    def requests_per_unit(self) -> float:
        return (self.workload.turns.min + self.workload.turns.max) / 2
