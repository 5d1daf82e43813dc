"""Origin grants: the headers, certificate checks and politeness the harness applies to a server it did not launch,
keyed by origin, granted for a block and gone after it; the key sent to its origin only and never shown."""

from __future__ import annotations

import ssl
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from harness import endpoint_access
from harness.endpoint_access import (
    MAX_PAUSE_S,
    BudgetSpent,
    Grant,
    Politeness,
    grant_for,
    granted,
    headers_for,
    http_client,
    origin_of,
    politeness_for,
    verify_for,
)

KEY = "sk-test-0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}


class Clock:
    """A ``time.monotonic`` the test moves by hand, so back-off arithmetic is checked without sleeping."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    # only this module's clock: the event loop keeps the real one
    monkeypatch.setattr(endpoint_access, "time", SimpleNamespace(monotonic=fake.monotonic))
    return fake


@pytest.mark.parametrize(("url", "origin"), [
    ("http://10.0.0.5:8000/v1/models", "http://10.0.0.5:8000"),
    ("http://gateway.example/prefix", "http://gateway.example:80"),
    ("https://Gateway.EXAMPLE/x?y=1", "https://gateway.example:443"),
    ("https://gateway.example:8443", "https://gateway.example:8443"),
    ("HTTP://Gateway.example:9000/", "http://gateway.example:9000"),
])
def test_origin_of_lowercases_the_host_and_fills_the_default_port(url: str, origin: str) -> None:
    assert origin_of(url) == origin


def test_a_grant_holds_for_its_block_and_the_one_before_comes_back() -> None:
    origin = origin_of("http://gateway.example")
    assert grant_for("http://gateway.example/v1/models") is None
    outer, inner = Grant(origin, {"X-Team": "a"}), Grant(origin, {"X-Team": "b"})
    with granted([outer]):
        assert headers_for("http://GATEWAY.example:80/metrics") == {"X-Team": "a"}
        with granted([inner, Grant(origin_of("http://other.example"), {"X-Team": "c"})]):
            assert headers_for("http://gateway.example/v1") == {"X-Team": "b"}
            assert headers_for("http://other.example/v1") == {"X-Team": "c"}
        assert grant_for("http://gateway.example") is outer and grant_for("http://other.example") is None
    assert grant_for("http://gateway.example") is None and headers_for("http://gateway.example") == {}


def test_a_grant_is_withdrawn_when_its_block_raises() -> None:
    with pytest.raises(RuntimeError), granted([Grant(origin_of("http://gateway.example"), AUTH)]):
        raise RuntimeError("the run failed")
    assert headers_for("http://gateway.example") == {}


async def test_headers_go_to_the_granted_origin_only() -> None:
    seen: dict[str, str | None] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen[str(request.url)] = request.headers.get("authorization")
        return httpx.Response(200, json={"data": []})

    with granted([Grant(origin_of("http://deployment.test:8000"), AUTH)]):
        async with http_client(transport=httpx.MockTransport(handler)) as client:
            await client.get("http://deployment.test:8000/v1/models")
            await client.get("http://metrics.test:8000/metrics")  # another host: no key
            await client.get("http://deployment.test:9000/metrics")  # another port is another origin
    assert seen == {"http://deployment.test:8000/v1/models": f"Bearer {KEY}",
                    "http://metrics.test:8000/metrics": None, "http://deployment.test:9000/metrics": None}


async def test_a_client_made_after_the_grant_ended_sends_no_key() -> None:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200)

    with granted([Grant(origin_of("http://deployment.test"), AUTH)]):
        pass
    async with http_client(transport=httpx.MockTransport(handler)) as client:
        await client.get("http://deployment.test/v1/models")
    assert seen == [None]


def test_verify_for_reads_the_granted_ca_bundle(tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    bundle = tmp_path / "ca.pem"
    trustme.CA().cert_pem.write_to_path(str(bundle))
    with granted([Grant(origin_of("https://private.example"), verify=str(bundle))]):
        context = verify_for("https://private.example/v1/models")
        assert isinstance(context, ssl.SSLContext)
        assert context.verify_mode == ssl.CERT_REQUIRED and len(context.get_ca_certs()) == 1


def test_verify_for_is_false_only_where_verification_was_turned_off() -> None:
    with granted([Grant(origin_of("https://lab.example"), verify=False), Grant(origin_of("https://prod.example"))]):
        assert verify_for("https://lab.example") is False
        assert verify_for("https://prod.example") is True
        assert verify_for("https://elsewhere.example") is True
        assert verify_for(None) is True


def test_the_budget_runs_out_after_max_requests() -> None:
    politeness = Politeness(max_requests=3)
    for _ in range(3):
        politeness.take()
    with pytest.raises(BudgetSpent, match="budget of 3 is spent"):
        politeness.take()
    assert politeness.sent == 3  # the refused request is not counted as sent
    unbounded = Politeness(max_requests=None)
    for _ in range(100):
        unbounded.take()
    assert unbounded.sent == 100


async def test_a_429_with_retry_after_holds_the_next_request_back() -> None:
    politeness = Politeness(max_requests=None)
    started = time.monotonic()
    politeness.answered(429, 0.2)
    assert politeness.throttled == 1 and politeness.resume_at >= started + 0.2
    await politeness.wait_turn()
    assert time.monotonic() - started >= 0.15
    waited = time.monotonic()
    await politeness.wait_turn()  # the pause is over: no more waiting
    assert time.monotonic() - waited < 0.1


def test_a_429_without_retry_after_backs_off_1_2_4_seconds(clock: Clock) -> None:
    politeness = Politeness(max_requests=None)
    resumes = []
    for _ in range(3):
        politeness.answered(429, None)
        resumes.append(politeness.resume_at - clock.now)
        clock.now = politeness.resume_at  # the client waited its turn, and was throttled again
    assert resumes == [1.0, 2.0, 4.0] and politeness.throttled == 3
    politeness.answered(200, None)  # an answer ends the streak
    politeness.answered(429, None)
    assert politeness.resume_at - clock.now == 1.0


def test_a_pause_never_shortens_an_earlier_one(clock: Clock) -> None:
    politeness = Politeness(max_requests=None)
    politeness.answered(429, 10.0)
    politeness.answered(429, 0.5)  # a concurrent request's shorter pause
    assert politeness.resume_at == clock.now + 10.0


def test_pauses_are_capped(clock: Clock) -> None:
    asked = Politeness(max_requests=None)
    asked.answered(429, 3600.0)
    assert asked.resume_at == clock.now + MAX_PAUSE_S
    backed_off = Politeness(max_requests=None)
    for _ in range(12):
        backed_off.answered(429, None)
    assert backed_off.resume_at == clock.now + MAX_PAUSE_S
    negative = Politeness(max_requests=None)
    negative.answered(429, -5.0)
    assert negative.resume_at == clock.now


def test_politeness_is_per_origin() -> None:
    shared = Politeness(max_requests=10)
    with granted([Grant(origin_of("http://prod.example"), politeness=shared)]):
        assert politeness_for("http://prod.example/v1/completions") is shared
        assert politeness_for("http://lab.example/v1/completions") is None


def test_a_grant_never_shows_its_key() -> None:
    grant = Grant(origin_of("https://prod.example"), AUTH, verify=True, politeness=Politeness(5))
    assert KEY not in repr(grant) and KEY not in str(grant)
    assert "https://prod.example:443" in repr(grant)  # what it is granted to stays visible
