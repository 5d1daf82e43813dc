"""The report as a reader sees it: rendered to HTML by a CommonMark renderer, its narrative first and measured, every
link of the narrative landing on an id the page holds, every figure beside it."""

from __future__ import annotations

import re
from pathlib import Path

from harness.report.html_page import APPENDICES, html_page, narrative_words, split_report, visible_words, write_html


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
