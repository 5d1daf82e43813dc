"""Render the report: the context built from stored results and verdicts, through the templates, to report.md.

The templates receive the ``ReportContext``'s fields by name (``ran``, ``cost``, ``evidence``, ...) and only format
them; an undefined name is an error (StrictUndefined), never an empty cell.
"""

from __future__ import annotations

from dataclasses import fields
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from harness.plan.cells import Plan
from harness.report.context import ReportContext, build_context
from harness.report.formatting import FILTERS
from harness.store import Store, write_atomic

TEMPLATES = Path(__file__).parent / "templates"
REPORT_TEMPLATE = "report.md.j2"


@cache  # one per process: it keeps the compiled templates (0.8 s to compile them all), reloading one that changed
def environment() -> jinja2.Environment:
    """The templates' environment: Markdown out (no escaping), undefined names refused, the report's filters."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(FILTERS)
    return env


def template_variables(context: ReportContext) -> dict[str, Any]:
    """The context's top-level fields by name; shallow, so the templates read the frozen values themselves."""
    return {f.name: getattr(context, f.name) for f in fields(context)}


def render_text(context: ReportContext) -> str:
    return environment().get_template(REPORT_TEMPLATE).render(template_variables(context))


def render_report(plan: Plan, store: Store, *, matrix_path: str | None = None) -> Path:
    """Write ``reports/<matrix>/report.md`` (and its plots) from what is stored; returns the report's path."""
    write_atomic(store.report_path, render_text(build_context(plan, store, matrix_path)))
    return store.report_path
