from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.workloads import ToolCallsWorkload
from harness.errors import ConfigError
from harness.load import make_requests
from harness.load.client import request_body
from harness.load.tool_catalog import BUILTIN


def test_each_request_offers_the_asked_function_among_others(tiny_tokenizer_dir: Path) -> None:
    workload = ToolCallsWorkload(tools_per_request=3, tool_choice="required", seed=2)
    requests = make_requests(workload, 20, tiny_tokenizer_dir)
    by_question = {e.question: e.function["name"].replace(".", "_") for e in BUILTIN}
    for request in requests:
        offered = [tool["function"]["name"] for tool in request.tools]
        assert request.api == "chat" and len(offered) == len(set(offered)) == 3
        assert by_question[str(request.prompt)] in offered
        assert request.tool_choice == "required" and not request.ignore_eos
    assert len({str(r.prompt) for r in requests}) > 3
    assert requests == make_requests(workload, 20, tiny_tokenizer_dir)  # seeded


def test_the_body_carries_tools_and_tool_choice(tiny_tokenizer_dir: Path) -> None:
    request = make_requests(ToolCallsWorkload(tools_per_request=2), 1, tiny_tokenizer_dir)[0]
    body = request_body(request, "m")
    assert body["messages"] == [{"role": "user", "content": request.prompt}]
    assert [t["type"] for t in body["tools"]] == ["function", "function"] and body["tool_choice"] == "auto"


def test_more_tools_than_the_catalog_is_an_error_before_load(tiny_tokenizer_dir: Path) -> None:
    with pytest.raises(ConfigError, match="tools_per_request"):
        make_requests(ToolCallsWorkload(tools_per_request=len(BUILTIN) + 1), 1, tiny_tokenizer_dir)
