"""TLS in the lean client: an ``https://`` server streamed through the same raw socket (events whole and in order,
keep-alive kept), its certificate checked as the origin was granted: an unknown CA refused before any response, a
granted CA bundle trusted, verification turned off explicitly."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from harness.endpoint_access import Grant, granted, origin_of
from harness.load.http import ConnectionPool
from harness.load.http_connection import ConnectionBroken
from harness.load.tls_layer import client_context

from tests.support.http_wire import EVENTS, STREAM_HEAD, Sink, canned, chunked, sse

trustme = pytest.importorskip("trustme")


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[ssl.SSLContext, str]:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    return context, str(bundle)


async def test_an_https_stream_arrives_whole_over_one_kept_connection(certificate: tuple[ssl.SSLContext, str]) -> None:
    context, bundle = certificate
    async with canned(STREAM_HEAD + chunked(sse(*EVENTS), 7), context) as (url, connections):
        with granted([Grant(origin_of(url), verify=bundle)]):
            async with ConnectionPool(url) as pool:
                for _ in range(3):
                    sink = Sink()
                    assert (await pool.post_events("/v1/completions", b"{}", sink))[0] == 200
                    assert sink.events == EVENTS
                    await asyncio.sleep(0.01)
    assert len(connections) == 1


async def test_an_unknown_ca_is_refused_before_any_response(certificate: tuple[ssl.SSLContext, str]) -> None:
    context, _ = certificate
    async with canned(STREAM_HEAD + chunked(sse(*EVENTS), 50), context) as (url, _):
        async with ConnectionPool(url) as pool:  # nothing granted: the system's trust store, which lacks this CA
            with pytest.raises(ConnectionBroken, match="CERTIFICATE_VERIFY_FAILED") as refused:
                await pool.post_events("/x", b"{}", Sink())
    assert not refused.value.responded


async def test_verification_turned_off_is_honoured(certificate: tuple[ssl.SSLContext, str]) -> None:
    context, _ = certificate
    async with canned(STREAM_HEAD + chunked(sse(*EVENTS), 50), context) as (url, _):
        with granted([Grant(origin_of(url), verify=False)]):
            async with ConnectionPool(url) as pool:
                assert (await pool.post_events("/x", b"{}", Sink()))[0] == 200


def test_the_context_follows_the_grant() -> None:
    strict = client_context(True)
    assert strict.verify_mode == ssl.CERT_REQUIRED and strict.check_hostname
    loose = client_context(False)
    assert loose.verify_mode == ssl.CERT_NONE and not loose.check_hostname
    mine = ssl.create_default_context()
    assert client_context(mine) is mine
