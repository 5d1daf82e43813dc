"""The faults the endpoint proxy (``harness_testing.endpoint_proxy``) injects, and their compact spec.

A plan maps the index of each inference POST (0-based, counted over every ``/completions`` and ``/chat/completions``
POST the proxy accepted) to one action; the rest get the default, ``pass`` unless ``*`` says otherwise. The spec is
what the CLI takes and what tests write::

    spec    := "" | item ("," item)*              # "" passes everything
    item    := target "=" action
    target  := N | N "-" M | "*"                  # M inclusive; ranges must not overlap; "*" at most once
    action  := "pass" | "reset" | "stall" | "status:" CODE [":" SECONDS]

    "0-2=status:429:1,5=reset,7=stall,*=pass"    # three 429s with Retry-After: 1, then a reset, then a stall
    "3-6=status:503"                              # a burst of four 503s
    "*=status:503"                                # every inference request fails

``status:CODE`` answers CODE (400-599) with an OpenAI-style JSON error; ``:SECONDS`` adds ``Retry-After: SECONDS``
(meant for 429 and 503). ``reset`` forwards the request, relays the head and the first SSE events, then aborts the
TCP connection; ``stall`` reads the request and never answers. The plan owns no I/O: the proxy carries it out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ActionKind = Literal["pass", "status", "reset", "stall"]

_TARGET = re.compile(r"(\d+)(?:-(\d+))?")
_STATUS = re.compile(r"status:(\d{3})(?::(\d+))?")
_PLAIN: dict[str, ActionKind] = {"pass": "pass", "reset": "reset", "stall": "stall"}


@dataclass(frozen=True, slots=True)
class FaultAction:
    """What the proxy does with one inference request."""

    kind: ActionKind = "pass"
    status: int | None = None
    """The status answered, for ``status`` only."""
    retry_after_s: int | None = None
    """Sent as ``Retry-After`` with ``status``; None sends no such header."""

    def __str__(self) -> str:
        if self.kind != "status":
            return self.kind
        return f"status:{self.status}" + ("" if self.retry_after_s is None else f":{self.retry_after_s}")

    @classmethod
    def parse(cls, text: str) -> FaultAction:
        """One action of the spec, e.g. ``reset`` or ``status:429:2``; ValueError names what is wrong."""
        if text in _PLAIN:
            return cls(kind=_PLAIN[text])
        match = _STATUS.fullmatch(text)
        if match is None:
            raise ValueError(f"unknown fault action {text!r}: expected pass, reset, stall, status:N or status:N:S")
        status = int(match[1])
        if not 400 <= status <= 599:
            raise ValueError(f"fault action {text!r}: an injected status must be an error, 400-599")
        return cls(kind="status", status=status, retry_after_s=None if match[2] is None else int(match[2]))


PASS = FaultAction()


@dataclass(frozen=True, slots=True)
class FaultRule:
    """One action for the inference requests ``first`` to ``last`` (both inclusive)."""

    first: int
    last: int
    action: FaultAction

    def __str__(self) -> str:
        target = str(self.first) if self.first == self.last else f"{self.first}-{self.last}"
        return f"{target}={self.action}"


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """Which inference request gets which action; an empty plan forwards everything."""

    rules: tuple[FaultRule, ...] = ()
    default: FaultAction = PASS

    def __post_init__(self) -> None:
        spans = sorted(self.rules, key=lambda rule: rule.first)
        for rule in spans:
            if rule.first < 0 or rule.last < rule.first:
                raise ValueError(f"fault rule {rule}: the range must run upwards from 0")
        for before, after in zip(spans, spans[1:], strict=False):
            if after.first <= before.last:
                raise ValueError(f"fault rules {before} and {after} overlap")

    def action_for(self, index: int) -> FaultAction:
        """The action for the ``index``-th inference request (0-based)."""
        for rule in self.rules:
            if rule.first <= index <= rule.last:
                return rule.action
        return self.default

    def __str__(self) -> str:
        items = [str(rule) for rule in self.rules]
        return ",".join(items + ([] if self.default == PASS else [f"*={self.default}"]))

    @classmethod
    def parse(cls, spec: str) -> FaultPlan:
        """A plan from its spec (grammar in the module docstring); ValueError names the bad item."""
        rules: list[FaultRule] = []
        default: FaultAction | None = None
        for item in (part.strip() for part in spec.split(",") if spec.strip()):
            target, equals, action_text = item.partition("=")
            if not equals:
                raise ValueError(f"fault item {item!r}: expected TARGET=ACTION, e.g. 0-2=status:503")
            try:
                action = FaultAction.parse(action_text.strip())
            except ValueError as error:
                raise ValueError(f"fault item {item!r}: {error}") from None
            target = target.strip()
            if target == "*":
                if default is not None:
                    raise ValueError(f"fault item {item!r}: '*' is given twice")
                default = action
                continue
            match = _TARGET.fullmatch(target)
            if match is None:
                raise ValueError(f"fault item {item!r}: target {target!r} is not N, N-M or *")
            first = int(match[1])
            rules.append(FaultRule(first, first if match[2] is None else int(match[2]), action))
        return cls(rules=tuple(rules), default=PASS if default is None else default)
