from __future__ import annotations

import pytest

from harness.bfcl import ToolSet
from harness.parity.chat_stream import StreamedReply, ToolCallText
from harness.parity.decoding import DECODINGS, decode_content_calls, decode_tool_calls, get_decoding

TOOLS = ToolSet(({"type": "function", "function": {"name": "spotify_play", "parameters": {"type": "object",
                                                                                           "properties": {}}}},),
                {"spotify_play": "spotify.play"})


def test_tool_calls_decode_to_the_checker_format_with_original_names() -> None:
    decoded = decode_tool_calls([ToolCallText("spotify_play", '{"artist": "A", "duration": 20}'),
                                 ToolCallText("spotify_play", '{"artist": "B"}')], TOOLS)
    assert decoded.calls == ({"spotify.play": {"artist": "A", "duration": 20}}, {"spotify.play": {"artist": "B"}})
    assert decoded.problem is None and not decoded.malformed and not decoded.no_call


@pytest.mark.parametrize(("arguments", "problem"), [('{"artist": "A"', "malformed_json"), ("", "malformed_json"),
                                                    ("[1, 2]", "wrong_shape"), ('"A"', "wrong_shape")])
def test_unreadable_arguments_are_malformed(arguments: str, problem: str) -> None:
    decoded = decode_tool_calls([ToolCallText("spotify_play", '{}'), ToolCallText("spotify_play", arguments)], TOOLS)
    assert decoded.calls is None and decoded.problem == problem and decoded.malformed
    assert decoded.detail and "spotify_play" in decoded.detail


def test_unknown_functions_are_kept_for_the_checker_and_flagged() -> None:
    decoded = decode_tool_calls([ToolCallText("spotify.play", "{}"), ToolCallText("rm_rf", '{"path": "/"}')], TOOLS)
    assert decoded.calls == ({"spotify.play": {}}, {"rm_rf": {"path": "/"}})
    assert decoded.problem == "unknown_function" and not decoded.malformed
    assert decoded.detail is not None and "rm_rf" in decoded.detail


def test_no_tool_calls_is_no_call() -> None:
    decoded = decode_tool_calls([], TOOLS)
    assert decoded.calls == () and decoded.no_call and not decoded.malformed


def test_content_calls_decode_from_a_json_array() -> None:
    text = ' [{"name": "spotify_play", "arguments": {"artist": "A"}}] '
    assert decode_content_calls(text, TOOLS).calls == ({"spotify.play": {"artist": "A"}},)
    assert decode_content_calls("[]", TOOLS).no_call
    assert decode_content_calls("  ", TOOLS).no_call


@pytest.mark.parametrize(("text", "problem"), [
    ('[{"name": "spotify_play", "arguments": {', "malformed_json"),
    ("Sure! I will play it.", "malformed_json"),
    ('{"name": "spotify_play", "arguments": {}}', "wrong_shape"),
    ('[{"name": "spotify_play"}]', "wrong_shape"),
    ('[{"name": 3, "arguments": {}}]', "wrong_shape"),
    ('[{"name": "spotify_play", "arguments": "{}"}]', "wrong_shape"),
    ('["spotify_play"]', "wrong_shape"),
])
def test_bad_content_is_malformed(text: str, problem: str) -> None:
    decoded = decode_content_calls(text, TOOLS)
    assert decoded.calls is None and decoded.problem == problem


def test_variants_set_their_request_fields() -> None:
    assert DECODINGS["free"].request_fields(TOOLS)["tool_choice"] == "auto"
    required = DECODINGS["required"].request_fields(TOOLS)
    assert required["tool_choice"] == "required"
    # arguments pinned to their schemas (vLLM's structural tags enforce them only for strict functions)
    assert all(tool["function"]["strict"] is True for tool in required["tools"])
    assert all("strict" not in tool["function"] for tool in DECODINGS["free"].request_fields(TOOLS)["tools"])
    fields = DECODINGS["json_schema"].request_fields(TOOLS)
    assert fields["tool_choice"] == "none" and fields["tools"]
    assert fields["response_format"]["type"] == "json_schema"
    assert fields["response_format"]["json_schema"]["schema"]["type"] == "array"
    assert DECODINGS["free"].request_fields(ToolSet((), {})) == {}  # BFCL sends no tools when there are none
    assert not DECODINGS["required"].can_decline and DECODINGS["free"].can_decline


def test_variants_decode_from_their_own_channel() -> None:
    reply = StreamedReply(content='[{"name": "spotify_play", "arguments": {}}]',
                          tool_calls=(ToolCallText("spotify_play", '{"a": 1}'),))
    assert DECODINGS["free"].decode(reply, TOOLS).calls == ({"spotify.play": {"a": 1}},)
    assert DECODINGS["json_schema"].decode(reply, TOOLS).calls == ({"spotify.play": {}},)


def test_registry_lookup() -> None:
    assert get_decoding("tool_choice_required").name == "required"
    with pytest.raises(ValueError, match="choose from"):
        get_decoding("guided")
