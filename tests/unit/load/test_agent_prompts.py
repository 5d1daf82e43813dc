from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.config.workloads import AgentWorkload
from harness.load import PROMPT_BLOCK, LoadSpec, run_load
from harness.load.agent_prompts import agent_warmup_requests, plan_sessions
from harness.metrics.turns import turn_stats
from harness_testing.fake_config import FakeConfig
from harness_testing.fake_engine import create_app


def _workload(**overrides: Any) -> AgentWorkload:
    fields: dict[str, Any] = dict(num_requests=4, warmup_requests=1, turns={"min": 2, "max": 4}, session_groups=2,
                                  system_prompt_tokens=20, tools=2, user_tokens=5, tool_result_tokens=6,
                                  output_tokens=4, seed=3)
    fields.update(overrides)
    return AgentWorkload(**fields)


def test_sessions_are_seeded_and_share_their_groups_prompt(tiny_tokenizer_dir: Path) -> None:
    sessions = plan_sessions(_workload(), 6, tiny_tokenizer_dir, offset=PROMPT_BLOCK)
    again = plan_sessions(_workload(), 6, tiny_tokenizer_dir, offset=PROMPT_BLOCK)
    assert sessions == again
    assert all(2 <= s.turns <= 4 and len(s.think_s) == s.turns - 1 for s in sessions)
    assert {s.system for s in sessions[0::2]} == {sessions[0].system}  # group 0
    assert sessions[0].system != sessions[1].system and sessions[0].tools != ()
    assert len({s.question for s in sessions}) == 6
    other_cell = plan_sessions(_workload(), 2, tiny_tokenizer_dir, offset=2 * PROMPT_BLOCK)
    warm = agent_warmup_requests(_workload(), 2, tiny_tokenizer_dir, PROMPT_BLOCK, True)
    systems = {sessions[0].system, sessions[1].system}
    assert not systems & {s.system for s in other_cell}  # another cell never starts with a warm cache
    assert not systems & {r.messages[0]["content"] for r in warm}
    assert all(r.turn == 0 and r.warmup for r in warm)


def test_planned_context_grows_by_answer_and_tool_result(tiny_tokenizer_dir: Path) -> None:
    session = plan_sessions(_workload(turns=3), 1, tiny_tokenizer_dir)[0]
    assert session.planned_tokens == (25, 35, 45)
    assert _workload(turns=3).max_sequence_tokens() == 45 + 4


async def test_each_turn_sends_back_the_servers_own_answer(tiny_tokenizer_dir: Path) -> None:
    app = create_app(FakeConfig(ttft_ms=1, itl_ms=1))
    spec = LoadSpec(base_url="http://fake", model="m", workload=_workload(), concurrency=2,
                    tokenizer_dir=tiny_tokenizer_dir, request_timeout_s=10.0)
    result = await run_load(spec, transport=httpx.ASGITransport(app=app))
    fake = app.state.fake
    measured = [r for r in result.records if not r.warmup]
    assert all(r.ok for r in result.records)
    sessions = plan_sessions(_workload(), 4, tiny_tokenizer_dir)
    assert len(measured) == sum(s.turns for s in sessions)
    answers = [fake.answers[f"chatcmpl-fake-{n + 1}"] for n in range(len(fake.bodies))]
    follow_ups = 0
    for body in fake.bodies:
        messages = body["messages"]
        if len(messages) <= 2:
            continue
        # the previous turn: the request whose conversation this one extends, answered with what it sends back
        before = next(k for k, b in enumerate(fake.bodies) if b["messages"] == messages[:-2])
        assert messages[-2] == {"role": "assistant", "content": answers[before]}
        assert messages[-1]["content"].startswith("<tool_response>")
        assert body["tools"] == fake.bodies[before]["tools"]
        follow_ups += 1
    assert follow_ups == sum(s.turns - 1 for s in sessions)
    turns = turn_stats(result.records)
    assert [t.turn for t in turns] == list(range(len(turns))) and turns[0].requests == 4
    assert turns[-1].context_tokens > turns[0].context_tokens
    assert all(t.cached_share is not None and t.cached_share > 0 for t in turns[1:])  # the prefix was seen
    assert json.dumps(result.records[-1].to_dict())  # session and turn travel with the record
    assert {r.session for r in measured} == {s.index for s in sessions}


def test_bad_turns_are_refused() -> None:
    with pytest.raises(ValueError, match=re.escape("max (2) is below min (3)")):
        _workload(turns={"min": 3, "max": 2})
