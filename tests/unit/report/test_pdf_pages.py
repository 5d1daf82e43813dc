"""The report printed by a real browser, as a reviewer holds it: the decision on its first page, the narrative's pages
counted, every page rasterised. Skipped where the Debian packages `make setup` installs are missing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.report import pdf_pages, print_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
printing = pytest.mark.skipif(
    not any(shutil.which(b) for b in pdf_pages.BROWSERS) or not shutil.which("pdftotext"),
    reason="no headless browser or poppler (make setup installs chromium-headless-shell and poppler-utils)")


@printing
def test_the_first_printed_page_holds_the_decision(capstone_report: Path) -> None:
    printed = print_report(capstone_report, pngs=True)
    assert printed.pdf == capstone_report.with_suffix(".pdf") and printed.pdf.read_bytes()[:5] == b"%PDF-"
    assert 1 <= printed.narrative_pages < printed.pages and 300 < printed.narrative_words
    assert len(printed.pngs) == printed.pages and all(p.read_bytes()[:8] == PNG_MAGIC for p in printed.pngs)
    first = subprocess.run(["pdftotext", "-layout", "-f", "1", "-l", "1", str(printed.pdf), "-"], capture_output=True,
                           text=True, check=True).stdout
    # the recommendation, its $/MTok, its margin over the runner-up with the interval, its parity verdict
    for shown in ("Verdict", "vllm/bf16/tp1/mtp2", "$3.06", "1.67x [1.59, 1.74]", "outside the launch", "passes by"):
        assert shown in first, shown


def test_printing_without_a_browser_says_what_to_install(capstone_report: Path, monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr(pdf_pages.shutil, "which", lambda name: None)
    with pytest.raises(HarnessError, match="chromium-headless-shell and poppler-utils"):
        print_report(capstone_report)
