"""The report as a reader sees it: rendered to HTML by a CommonMark renderer, its narrative first and measured, every
link of the narrative landing on an id the page holds, every figure beside it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

from harness.config import load_matrix
from harness.pipeline import render
from harness.plan import expand
from harness.report.html_page import APPENDICES, html_page, narrative_words, split_report, visible_words, write_html
from harness.result_records import CellResult
from harness.store import Store

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_launches, summary


def test_the_report_renders_to_html(capstone_report: Path) -> None:
    page = write_html(capstone_report)
    assert page == capstone_report.with_name("report.html")
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<title>Capstone report: t</title>" in html
    narrative, appendices = html.split('<div class="appendices">')
    assert "<h2>Verdict</h2>" in narrative and "<h2>1. What was asked</h2>" in appendices
    assert "<table>" in narrative and appendices.count("<table>") > 5
    # every link of the report lands on an id the page holds, and every figure is a file beside it
    ids = set(re.findall(r'id="([\w-]+)"', html))
    targets = set(re.findall(r'href="#([\w-]+)"', html))
    assert {"a-cost", "a-slo", "a-levers", "a-comparisons", "a-rec-m-w"} <= targets <= ids
    figures = re.findall(r'<img src="([^"]+)"', html)
    assert "plots/narrative-cost.png" in figures and all((page.parent / f).is_file() for f in figures)
    # the narrative alone, for counting its pages
    alone = write_html(capstone_report, narrative_only=True).read_text()
    assert "<h2>Verdict</h2>" in alone and 'class="appendices"' not in alone


def test_the_narrative_is_split_from_its_appendices(capstone_report: Path) -> None:
    text = capstone_report.read_text()
    narrative, appendices = split_report(text)
    assert APPENDICES in text and narrative.startswith("# Capstone report: t")
    assert appendices.lstrip().startswith("# Appendices") and "## Verdict" not in appendices
    assert 300 < narrative_words(text) < visible_words(html_page(text, "t"))


def test_words_are_counted_as_a_reader_sees_them() -> None:
    assert visible_words("<style>p { a: b }</style><p>two <a href='#x'>words</a> &amp; more</p>") == 4
    assert "<li>one</li>\n<li>two</li>" in html_page("- one\n- two\n", "t")


HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)"><!-- x --> ```\n<b>bold</b>'


def test_markup_in_what_the_report_quotes_stays_text(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    """A matrix description, a failed cell's reason and its server's log tail, all carrying markup and script: the
    page holds none of it as elements (parsed, not grepped), and the markdown none as raw HTML."""
    text = BASE_MATRIX.replace("name: t\n", f"name: t\ndescription: {json.dumps(HOSTILE)}\n")
    plan = expand(load_matrix(write_matrix(text)))
    store = Store(tmp_path / "reports", plan.matrix.name, lock_dir=tmp_path / "lock")
    for index, cell in enumerate(plan.cells):
        if index == 0:
            store.write_result(cell, CellResult(cell_id=cell.cell_id, label=cell.label,
                                                server_id=cell.server.server_id, status="failed", reason=HOSTILE,
                                                log_tail=HOSTILE, started_at="t", finished_at="t"))
            continue
        store_launches(store, cell, [summary(2000.0 * f, 20.0) for f in (0.98, 1.0, 1.02)])
    report = render(plan, store)
    markdown = report.read_text()
    assert markdown.count("alert(1)") >= 3  # quoted in the description, the reason and the log
    outside_code = re.sub(r"^(`{3,})[^\n]*\n.*?^\1$", "", markdown, flags=re.S | re.M)
    assert "alert(1)" in outside_code and not re.search(r"<(script|img|b|!--)", outside_code.replace(
        "<!-- appendices -->", ""))
    page = write_html(report).read_text()
    found = _Elements()
    found.feed(page)
    assert not {"script", "img", "b"} & found.tags, {"script", "img", "b"} & found.tags
    assert not any(name.startswith("on") for name in found.attributes)
    assert "alert(1)" in found.text and "<b>bold</b>" in found.text  # shown, as text


class _Elements(HTMLParser):
    """The elements, attribute names and text of a page, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "img" or dict(attrs).get("src") == "x":  # the report's own figures are images too
            self.tags.add(tag)
        self.attributes |= {name for name, _ in attrs}

    def handle_data(self, data: str) -> None:
        self.text += data
