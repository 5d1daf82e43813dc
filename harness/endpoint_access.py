"""How the harness may speak to a server it did not launch: the headers it sends there (the API key), how it checks
the server's certificate, how many requests it may send and when it must wait.

One owner for all of it, keyed by origin (scheme, host, port): a deployment's access is granted for its run
(``granted``), and every HTTP client the harness makes reads it here, so the load client, parity, metric scrapes,
the expert-load and profiler calls all behave alike without a credential travelling through their arguments. The key
is then held in one object that is never serialized, whose ``repr`` hides it, and that is sent to the origins granted
only: a metrics URL on another host gets it only when the matrix says so (``metrics_auth``).

Politeness is per origin too: a budget of inference requests (past it nothing more is sent, and the record says so)
and a pause that a 429's ``Retry-After`` sets (every request to that origin waits it out; a 429 without one backs off
exponentially from one second), so a server that asks the client to slow down is never hammered.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_PAUSE_S = 60.0
"""The longest a Retry-After (or the back-off without one) holds requests back: a server asking for more is
treated as gone for the rest of the cell by its request timeout, not waited for indefinitely."""


def origin_of(url: str) -> str:
    """``scheme://host:port`` of a URL, the default port filled in."""
    parts = urlsplit(url)
    scheme = parts.scheme or "http"
    port = parts.port or DEFAULT_PORTS.get(scheme, 80)
    return f"{scheme}://{(parts.hostname or '').lower()}:{port}"


class BudgetSpent(Exception):
    """The origin's request budget is spent: the request is not sent."""


@dataclass(slots=True)
class Politeness:
    """The request budget and the pace of one origin, shared by every client speaking to it in this process."""

    max_requests: int | None
    sent: int = 0
    throttled: int = 0
    """429 answers received (each counted once, whatever it asked)."""
    resume_at: float = 0.0
    """``time.monotonic()`` before which no request is sent."""
    _streak: int = 0

    def take(self) -> None:
        """Count one request against the budget; raises ``BudgetSpent`` when it is spent."""
        if self.max_requests is not None and self.sent >= self.max_requests:
            raise BudgetSpent(f"the request budget of {self.max_requests} is spent")
        self.sent += 1

    async def wait_turn(self) -> None:
        """Wait out a pause a 429 asked for."""
        while (delay := self.resume_at - time.monotonic()) > 0:
            await asyncio.sleep(delay)

    def answered(self, status: int, retry_after: float | None) -> None:
        """Learn from an answer: a 429 pauses the origin (its Retry-After, or 1, 2, 4 ... s without one)."""
        if status != 429:
            self._streak = 0
            return
        self.throttled += 1
        self._streak += 1
        pause = retry_after if retry_after is not None else 2.0 ** (self._streak - 1)
        self.resume_at = max(self.resume_at, time.monotonic() + min(max(pause, 0.0), MAX_PAUSE_S))


@dataclass(frozen=True, slots=True)
class Grant:
    """What one origin gets: headers (the secret among them, never shown), TLS verification, politeness."""

    origin: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    verify: bool | str = True
    """True (the system's trust store), False (explicitly off), or a CA bundle's path."""
    politeness: Politeness | None = None


_GRANTS: dict[str, Grant] = {}


@contextlib.contextmanager
def granted(grants: Iterable[Grant]) -> Generator[None]:
    """Grant access to these origins while the block runs; what was granted before is restored after."""
    grants = list(grants)
    saved = {g.origin: _GRANTS.get(g.origin) for g in grants}
    _GRANTS.update({g.origin: g for g in grants})
    try:
        yield
    finally:
        for origin, old in saved.items():
            if old is None:
                _GRANTS.pop(origin, None)
            else:
                _GRANTS[origin] = old


def grant_for(url: str) -> Grant | None:
    return _GRANTS.get(origin_of(url))


def headers_for(url: str) -> dict[str, str]:
    """The headers granted to ``url``'s origin (none where nothing was granted)."""
    grant = grant_for(url)
    return dict(grant.headers) if grant is not None else {}


def verify_for(url: str | None) -> bool | ssl.SSLContext:
    """How ``url``'s certificate is checked: the system's trust store, the granted CA bundle, or not at all."""
    grant = grant_for(url) if url else None
    if grant is None or grant.verify is True:
        return True
    if grant.verify is False:
        return False
    return ssl.create_default_context(cafile=grant.verify)


def politeness_for(url: str) -> Politeness | None:
    grant = grant_for(url)
    return grant.politeness if grant is not None else None


class OriginAuth(httpx.Auth):
    """Adds an origin's granted headers to each request sent there, and to no other."""

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        request.headers.update(headers_for(str(request.url)))
        yield request


def http_client(url: str | None = None, **kwargs: Any) -> httpx.AsyncClient:
    """An httpx client that sends each origin its granted headers and checks certificates as ``url``'s origin was
    granted (a client made for one server). Proxy variables never reroute the harness's traffic (``trust_env``)."""
    return httpx.AsyncClient(auth=OriginAuth(), verify=verify_for(url), trust_env=False, **kwargs)
