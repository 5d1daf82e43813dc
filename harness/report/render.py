"""Render the report: the context built from stored results and verdicts, through the templates, to report.md;
and the explorer page (``explorer``, ``explorer_page``) from the same context, beside it.

The templates receive the ``ReportContext``'s fields by name (``ran``, ``cost``, ``evidence``, ...) and only format
them; an undefined name is an error (StrictUndefined), never an empty cell.
"""

from __future__ import annotations

import re
from dataclasses import fields
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from harness.plan.cells import Plan
from harness.report.context import ReportContext, build_context
from harness.report.explorer import explorer_data
from harness.report.explorer_page import write_explorer
from harness.report.formatting import FILTERS
from harness.store import Store, write_atomic

TEMPLATES = Path(__file__).parent / "templates"
REPORT_TEMPLATE = "report.md.j2"


_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def inert(value: Any) -> Any:
    """Every value a template prints, made inert as Markdown: a ``<`` that would open a tag or a comment becomes
    ``&lt;`` (which every Markdown renderer shows as ``<``), so text the report quotes (a matrix's description, a
    server's words, a model's output) can never be markup. ``code_block`` output is already inert, and kept."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return _TAG_START.sub("&lt;", value)
    return value


def code_block(text: str, info: str = "text", indent: int = 0) -> Markup:
    """``text`` verbatim in a fenced code block whose fence is longer than any run of backticks in it, so nothing
    in it can close the block early; inside it, nothing is markup. ``indent``: the lines after the first are
    indented so (the first is where the template put it), for a block inside a list item."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return Markup(f"\n{' ' * indent}".join([f"{fence}{info}", *text.splitlines(), fence]))


@cache  # one per process: it keeps the compiled templates (0.8 s to compile them all), reloading one that changed
def environment() -> jinja2.Environment:
    """The templates' environment: Markdown out (every printed value made inert, ``inert``), undefined names
    refused, the report's filters."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             finalize=inert)
    env.filters.update(FILTERS)
    env.filters["code_block"] = code_block
    return env


def template_variables(context: ReportContext) -> dict[str, Any]:
    """The context's top-level fields by name; shallow, so the templates read the frozen values themselves."""
    return {f.name: getattr(context, f.name) for f in fields(context)}


def render_text(context: ReportContext) -> str:
    return environment().get_template(REPORT_TEMPLATE).render(template_variables(context))


def render_report(plan: Plan, store: Store, *, matrix_path: str | None = None) -> Path:
    """Write ``reports/<matrix>/report.md`` (and its plots) from what is stored, and the explorer page beside it
    from the same context (``explorer.html``); returns the report's path."""
    context = build_context(plan, store, matrix_path)
    write_atomic(store.report_path, render_text(context))
    write_explorer(explorer_data(context, store), store.explorer_path)
    return store.report_path
