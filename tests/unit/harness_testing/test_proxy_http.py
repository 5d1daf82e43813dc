from __future__ import annotations

import asyncio
import json

import pytest

from harness_testing.proxy_http import BadRequest, Request, chunk, error_response, read_request, response_head


def _reader(data: bytes, limit: int = 1 << 16) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=limit)
    reader.feed_data(data)
    reader.feed_eof()
    return reader


async def test_requests_are_read_one_after_another_off_one_connection() -> None:
    reader = _reader(b"POST /v1/completions?a=b HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n"
                     b"Content-Length: 2\r\n\r\n{}"
                     b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
    first = await read_request(reader)
    second = await read_request(reader)
    assert isinstance(first, Request) and isinstance(second, Request)
    assert (first.method, first.target, first.body, first.keep_alive) == ("POST", "/v1/completions?a=b", b"{}", True)
    assert first.header(b"authorization") == "Bearer k" and first.header(b"x-missing") is None
    assert (second.method, second.body, second.keep_alive) == ("GET", b"", False)
    assert await read_request(reader) is None  # the client closed between requests


async def test_http_1_0_closes_unless_asked_to_keep_alive() -> None:
    closing = await read_request(_reader(b"GET / HTTP/1.0\r\n\r\n"))
    kept = await read_request(_reader(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"))
    assert closing is not None and not closing.keep_alive and kept is not None and kept.keep_alive


async def test_a_body_cut_short_is_a_closed_connection() -> None:
    assert await read_request(_reader(b"POST / HTTP/1.1\r\ncontent-length: 10\r\n\r\n{}")) is None


@pytest.mark.parametrize(("data", "status"), [
    (b"GARBAGE\r\n\r\n", 400),
    (b"GET / HTTP/2\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nno colon here\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\ncontent-length: ten\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 501),
    (b"GET / HTTP/1.1\r\nhost: x", 400),
    (b"GET / HTTP/1.1\r\nx-big: " + b"a" * 200 + b"\r\n\r\n", 431),
])
async def test_unreadable_requests_are_refused_with_a_status(data: bytes, status: int) -> None:
    with pytest.raises(BadRequest) as refused:
        await read_request(_reader(data, limit=128))
    assert refused.value.status == status


def test_responses_are_framed_for_http_1_1() -> None:
    assert response_head(200, [(b"content-type", b"text/event-stream")], keep_alive=True) == (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
    assert response_head(599, [], keep_alive=False) == b"HTTP/1.1 599 Unknown\r\nconnection: close\r\n\r\n"
    assert chunk(b"data: 1\n\n") == b"9\r\ndata: 1\n\n\r\n"
    head, _, body = error_response(429, "slow down", "injected_fault", keep_alive=True,
                                   extra=[(b"retry-after", b"2")]).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 429 Too Many Requests\r\n") and b"\r\nretry-after: 2" in head
    assert b"content-length: %d" % len(body) in head
    assert json.loads(body) == {"error": {"message": "slow down", "type": "injected_fault", "code": 429}}
