"""The report as a reader sees it: ``report.md`` rendered to a standalone ``report.html`` beside it.

markdown-it-py renders CommonMark with its table extension, the dialect the report is written in. Of raw HTML it
keeps only what the templates write, the ``<a id>`` anchors the narrative's numbers link to and comments; any other
tag is shown as text, so markup in what the report quotes (a matrix's description, a server's log, a model's
output) never reaches the page live, whatever the templates' own escaping missed. The page's stylesheet is made for
print as much as for the screen: A4 pages, tables in a smaller face, a page break before the appendices, so that the
browser that prints it to PDF (``harness.report.pdf_pages``) shows the page count a reviewer holds.

The narrative and its appendices are one file; ``APPENDICES`` marks where the second begins, so the narrative can
be measured alone (its words here, its pages by printing it alone).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from harness.store import write_atomic

APPENDICES = "<!-- appendices -->"
"""The line of ``report.md`` where the narrative ends and the appendices begin."""

STYLE = """
@page { size: A4; margin: 16mm 15mm 16mm 15mm; }
body { font-family: "DejaVu Sans", "Helvetica", sans-serif; font-size: 9pt; line-height: 1.36; color: #111;
       max-width: 190mm; margin: 0 auto; }
h1 { font-size: 15pt; margin: 0 0 6pt 0; }
h2 { font-size: 12pt; margin: 12pt 0 4pt 0; border-bottom: 1px solid #ccc; }
h3 { font-size: 10.5pt; margin: 9pt 0 3pt 0; }
h1, h2, h3 { break-after: avoid; }
tr, img { break-inside: avoid; }
p, ul { margin: 3pt 0 5pt 0; }
li { margin: 1pt 0; }
table { border-collapse: collapse; font-size: 7.5pt; margin: 4pt 0 8pt 0; }
th, td { border: 1px solid #ccc; padding: 1.5pt 3pt; vertical-align: top; }
th { background: #f2f2f2; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: 0.88em; overflow-wrap: anywhere; }
.narrative table code { white-space: nowrap; }
pre { background: #f6f6f6; padding: 4pt; white-space: pre-wrap; font-size: 7.5pt; }
img { max-width: 100%; max-height: 80mm; display: block; margin: 4pt auto; }
a { color: #0645ad; text-decoration: none; }
.appendices { break-before: page; }
.appendices table { font-size: 6.5pt; }
"""


_OWN_TAG = re.compile(r'<a id="[\w-]+">|</a>|<!--[^<>]*-->')
"""The raw HTML the report's templates write: anchors with an id, their ends, comments."""


def _own_html(_renderer: object, tokens: Sequence[Token], idx: int, _options: OptionsDict, _env: EnvType) -> str:
    content = tokens[idx].content
    if re.fullmatch(rf"\s*(?:(?:{_OWN_TAG.pattern})\s*)+", content):
        return content
    return html.escape(content)  # anything else is quoted text: shown, never live


def markdown_html(markdown: str) -> str:
    """The HTML of a markdown text, as a CommonMark renderer with tables shows it (only the report's own raw HTML
    kept live)."""
    renderer = MarkdownIt("commonmark", {"html": True}).enable("table")
    renderer.add_render_rule("html_inline", _own_html)
    renderer.add_render_rule("html_block", _own_html)
    rendered: str = renderer.render(markdown)
    return rendered


def split_report(markdown: str) -> tuple[str, str]:
    """The report's narrative and its appendices (empty when the text has none)."""
    narrative, _, appendices = markdown.partition(APPENDICES)
    return narrative, appendices


def html_page(markdown: str, title: str, *, narrative_only: bool = False) -> str:
    """A standalone page of the report: its narrative, then (unless ``narrative_only``) its appendices."""
    narrative, appendices = split_report(markdown)
    body = f'<main class="narrative">\n{markdown_html(narrative)}</main>\n'
    if appendices and not narrative_only:
        body += f'<div class="appendices">\n{markdown_html(appendices)}</div>\n'
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
            f"<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n")


def visible_words(html_text: str) -> int:
    """How many words a reader sees in an HTML text: tags dropped, entities decoded, tables' cells included."""
    text = re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>|<title>.*?</title>", " ", html_text, flags=re.S))
    return len(html.unescape(text).split())


def narrative_words(markdown: str) -> int:
    """The words of the report's narrative as rendered, its tables included."""
    return visible_words(markdown_html(split_report(markdown)[0]))


def write_html(report: Path, *, narrative_only: bool = False) -> Path:
    """Render ``report`` (``report.md``) to ``report.html`` beside it, or ``narrative.html`` for the narrative
    alone; the figures it links stay where they are, relative to both."""
    markdown = report.read_text()
    title = markdown.splitlines()[0].lstrip("# ").strip() if markdown else report.stem
    path = report.with_name("narrative.html" if narrative_only else "report.html")
    write_atomic(path, html_page(markdown, title, narrative_only=narrative_only))
    return path
