"""Workload → the exact requests a cell sends: prompts and output lengths, planned before any timing starts.

This module owns ``PlannedRequest`` and the registry of workload kinds: one ``WorkloadKind`` class per kind, registered
beside its prompt maker and listed in ``WORKLOAD_KINDS`` (entry-point group ``harness.workload_kinds``), owns what the
rest of the harness would otherwise branch on (its prompts, whether its unit of work is a session, whether its own
timing paces the measured phase, its plan line and the report's view of its cells). A kind is imported when first asked
for; what is heavy stays inside its methods (the dataset kind imports ``datasets`` only when it reads a dataset). A kind
from outside the package is declared the same way, with its config model registered in ``harness.config.workloads``.
This module knows nothing of HTTP or timing; the client turns a ``PlannedRequest`` into a request body.

Prompts are deterministic: request ``i`` of a workload is the same on every run, seeded by ``(workload.seed, i)``
alone, so it does not depend on how many requests are planned. Warm-up requests draw from a separate stream, so a
warm-up never sends a measured prompt (which would warm the prefix cache for it). Indices come in blocks of
``PROMPT_BLOCK``: a cell's measured prompts start at a block boundary (``pipeline.prompt_offset``), and kinds whose
requests share something (the shared-prefix kind's prefixes) share it within a block only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

from harness.config.workloads import WorkloadBase, workload_models
from harness.errors import ConfigError
from harness.registry import Registry

Api = Literal["completions", "chat"]
PROMPT_BLOCK = 1_000_000
W = TypeVar("W", bound=WorkloadBase)


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    """One request ready to send: what to ask and how long an answer to ask for."""

    index: int
    warmup: bool
    api: Api
    prompt: tuple[int, ...] | str
    """Token ids for the completions API (exact length); text for chat (one user message, unless ``messages``)."""
    input_tokens: int
    """Planned prompt length in tokens."""
    max_tokens: int
    temperature: float = 0.0
    ignore_eos: bool = True
    tools: tuple[dict[str, Any], ...] = ()
    """OpenAI ``tools`` (function definitions) sent with a chat request; none when empty."""
    tool_choice: str | None = None
    messages: tuple[dict[str, Any], ...] = ()
    """A whole chat conversation to send instead of one user message (an agent session's turn)."""
    session: int | None = None
    turn: int | None = None
    due_s: float | None = None
    """When to send it, seconds after the measured phase starts (a trace's own timing); None: as the load pattern
    says."""


class PlannedSession(Protocol):
    """Measured work whose later turns depend on the server's answers (an agent session): the runner sends
    ``request(0, first_messages())``, then for each later turn waits ``think_s[turn - 1]`` and sends the
    conversation so far plus ``follow_up(turn, answer)``."""

    @property
    def turns(self) -> int: ...

    @property
    def think_s(self) -> tuple[float, ...]: ...

    def first_messages(self) -> list[dict[str, Any]]: ...

    def follow_up(self, turn: int, answer: str) -> list[dict[str, Any]]: ...

    def request(self, turn: int, messages: list[dict[str, Any]]) -> PlannedRequest: ...


class WorkloadKind(Generic[W]):
    """What one kind of workload sends and how the harness treats it: subclass it beside the kind's prompt maker,
    declare ``name`` and ``model`` and list it in ``WORKLOAD_KINDS``'s entry points. Only ``requests`` must be
    written; the defaults are those of independent requests sent on the cell's load pattern."""

    name: ClassVar[str] = ""
    """The ``kind`` a matrix writes, and the name its entry in ``WORKLOAD_KINDS`` is listed under."""
    model: ClassVar[type[WorkloadBase]]
    """Its config model, registered with ``harness.config.workloads.register_workload_model``."""
    countable: ClassVar[bool] = True
    """Whether a cell's measured requests are known before it runs (an agent's are not: a failed turn ends its
    session), so the progress line can show a total."""
    own_timing: ClassVar[bool] = False
    """Whether its measured requests carry ``due_s`` and are sent then, whatever the load pattern says."""
    report_shape: ClassVar[str | None] = None
    """The report's view of its cells beside the tables (``harness.report.load_shapes.SHAPE_VIEWS``)."""

    def __init__(self, workload: W) -> None:
        self.workload = workload

    def requests(self, count: int, tokenizer_dir: Path | None, offset: int, warmup: bool) -> list[PlannedRequest]:
        """Requests ``offset .. offset+count-1`` (the warm-up stream when ``warmup``)."""
        raise NotImplementedError

    def measured_work(self, count: int, tokenizer_dir: Path | None,
                      offset: int) -> Sequence[PlannedRequest | PlannedSession]:
        """What the measured phase hands to user slots or arrivals, one unit each: by default its requests."""
        return self.requests(count, tokenizer_dir, offset, False)

    def plan_bound(self, count: int) -> str:
        """How ``harness plan`` says what bounds a cell of ``count`` measured units."""
        return f"{count} requests"

    def requests_per_unit(self) -> float:
        """How many requests one measured unit sends on average (the plan's time estimate counts them)."""
        return 1.0


def _declares_its_model(name: str, cls: type[WorkloadKind[Any]]) -> None:
    model = getattr(cls, "model", None)
    if model not in workload_models() or model.model_fields["kind"].default != name:
        raise TypeError(f"workload kind {name!r} ({cls.__module__}.{cls.__qualname__}) must declare as `model` the "
                        f"config model registered for kind {name!r} (register_workload_model)")


WORKLOAD_KINDS: Registry[type[WorkloadKind[Any]]] = Registry("workload kind", "harness.workload_kinds",
                                                                check=_declares_its_model)
"""Every workload kind, by the ``kind`` a matrix writes (docs/extending/index.md)."""


def workload_kind_names() -> tuple[str, ...]:
    """Every kind's name, sorted."""
    return WORKLOAD_KINDS.names()


def kind_of(workload: WorkloadBase) -> WorkloadKind[Any]:
    """The registered kind of a workload, bound to it; an unknown kind is a ConfigError naming the known ones."""
    if workload.kind not in WORKLOAD_KINDS:
        raise ConfigError("workload", "kind", f"no workload kind {workload.kind!r} is registered",
                          f"use one of: {', '.join(workload_kind_names())} (or install the package that declares "
                          "it: docs/extending/index.md)")
    return WORKLOAD_KINDS.get(workload.kind)(workload)


def make_requests(
    workload: WorkloadBase, count: int, tokenizer_dir: Path | None, *, offset: int = 0, warmup: bool = False
) -> list[PlannedRequest]:
    """Plan requests ``offset .. offset+count-1`` of a workload (the warm-up stream when ``warmup``)."""
    return kind_of(workload).requests(count, tokenizer_dir, offset, warmup)
