"""Render the report: the context built from stored results and verdicts, through the templates, to report.md."""

from __future__ import annotations

from pathlib import Path

import jinja2

from harness.plan.cells import Plan
from harness.report.context import build_context, fmt, pct, pct_plain, usd
from harness.store import Store, write_atomic

TEMPLATES = Path(__file__).parent / "templates"


def render_report(plan: Plan, store: Store, *, matrix_path: str | None = None) -> Path:
    """Write ``reports/<matrix>/report.md`` (and its plots) from what is stored; returns the report's path."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(fmt=fmt, usd=usd, pct=pct, pct_plain=pct_plain)
    context = build_context(plan, store, matrix_path)
    text = env.get_template("report.md.j2").render(context)
    write_atomic(store.report_path, text)
    return store.report_path
