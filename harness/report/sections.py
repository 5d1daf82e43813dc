"""The report's sections, in order: one list that numbers the headings and every cross-reference to them, and
the anchors the narrative's numbers link to.

A template writes ``## {{ sections.cost.heading }}`` for a heading and ``{{ sections.cost.ref }}`` where the text
points at it; neither carries a number of its own, so inserting or moving a section renumbers both alike.

The report opens with a narrative (unnumbered sections: the verdict, the question, the defence, the levers, the
risks, how to reproduce) and keeps its evidence after it as numbered appendices. Every number the narrative states
links to the appendix table it comes from, by an id that table carries (``Anchors``): an explicit ``<a id>`` rather
than a heading's generated slug, which differs between renderers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class SectionSpec:
    key: str
    """The name templates use (``sections.<key>``)."""
    title: str
    """The heading's text; ``{unit}`` stands for the priced device (GPU, CPU machine)."""
    numbered: bool = True
    """False for the narrative that opens the report and the reference lists that close it; the numbered sections
    are its appendices."""


SECTIONS: tuple[SectionSpec, ...] = (
    # the narrative
    SectionSpec("verdict", "Verdict", numbered=False),
    SectionSpec("question", "The question", numbered=False),
    SectionSpec("defence", "Why this recipe", numbered=False),
    SectionSpec("levers", "What each lever bought, against the capstone lecture's claims", numbered=False),
    SectionSpec("not_measured", "Risks and what was not measured", numbered=False),
    SectionSpec("how_to_reproduce", "How to reproduce", numbered=False),
    # the appendices: the evidence, every table
    SectionSpec("asked", "What was asked"),
    SectionSpec("recommendation", "The recommendation and its defence"),
    SectionSpec("frontiers", "Frontiers: output tok/s per {unit} against interactivity"),
    SectionSpec("cost", "What a token costs"),
    SectionSpec("throughput", "Throughput and latency"),
    SectionSpec("prediction", "Predicted beside measured"),
    SectionSpec("load_shapes", "Agent sessions, trace replay and SLO searches"),
    SectionSpec("parity", "Accuracy parity"),
    SectionSpec("profiles", "Profiles"),
    SectionSpec("expert_load", "Expert load: the routing each cell really did"),
    SectionSpec("gate", "Regression gate"),
    SectionSpec("reproduction", "Reproduction: this run beside an earlier one on this machine kind"),
    SectionSpec("reproduce", "Reproducing this report"),
    SectionSpec("failed", "Failed cells", numbered=False),
    SectionSpec("not_run", "Not run yet", numbered=False),
    SectionSpec("metrics", "Metric definitions", numbered=False),
)
"""Every top-level section of ``report.md``, in the order the templates render them."""


@dataclass(frozen=True, slots=True)
class Section:
    """One section as rendered: its heading and how other sections refer to it."""

    key: str
    title: str
    number: int | None
    """Its place among the numbered sections; None for an unnumbered one."""

    @property
    def heading(self) -> str:
        """The heading's text, after the ``##``: ``4. What a token costs``."""
        return self.title if self.number is None else f"{self.number}. {self.title}"

    @property
    def ref(self) -> str:
        """A cross-reference in running text: ``section 4`` (an unnumbered section is named instead)."""
        return f"the section “{self.title}”" if self.number is None else f"section {self.number}"


def number_sections(device_unit: str, specs: tuple[SectionSpec, ...] = SECTIONS) -> Mapping[str, Section]:
    """The sections by key, numbered in order (unnumbered ones skipped), titles filled in for ``device_unit``."""
    found: dict[str, Section] = {}
    number = 0
    for spec in specs:
        if spec.key in found:
            raise ValueError(f"section {spec.key!r} is listed twice")
        number += spec.numbered
        found[spec.key] = Section(spec.key, spec.title.format(unit=device_unit), number if spec.numbered else None)
    # read-only: the context that holds it is frozen, and a template must not renumber anything
    return MappingProxyType(found)


@dataclass(frozen=True, slots=True)
class Anchors:
    """The ids of the appendix tables (and the few paragraphs) the narrative's numbers link to: ``[$0.16](#a-cost)``.
    Each table carries its id in its first header cell; a recommendation's table carries ``panel``'s."""

    slo: str = "a-slo"
    slo_claims: str = "a-slo-claims"
    hardware: str = "a-hardware"
    frontier_points: str = "a-frontier-points"
    comparisons: str = "a-comparisons"
    cost: str = "a-cost"
    levers: str = "a-levers"
    throughput: str = "a-throughput"
    speculation: str = "a-speculation"
    prediction: str = "a-prediction"
    search: str = "a-search"
    parity: str = "a-parity"
    expert_load: str = "a-expert-load"
    fidelity: str = "a-fidelity"
    gate: str = "a-gate"
    history: str = "a-history"
    reproduction: str = "a-reproduction"
    lock: str = "a-lock"
    commands: str = "a-commands"

    @staticmethod
    def panel(model: str, workload: str) -> str:
        """The id of one model and workload's recommendation table."""
        return "a-rec-" + re.sub(r"[^a-z0-9]+", "-", f"{model}-{workload}".lower()).strip("-")
