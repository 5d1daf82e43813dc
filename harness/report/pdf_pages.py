"""The report printed as a reviewer holds it: ``report.html`` to ``report.pdf`` by a headless Chromium, its pages to
PNG by poppler's ``pdftoppm``, and the narrative printed alone to count the pages it fills.

Both are Debian packages (``chromium-headless-shell``, ``poppler-utils``) that ``make setup`` installs; neither is
a Python dependency, so a machine without them still renders ``report.md`` and ``report.html``, and asking for a PDF
there says what to install.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.report.html_page import narrative_words, write_html

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
"""Executables that print a page to PDF headless, in the order they are tried."""
PRINT_TIMEOUT_S = 120
INSTALL = "install the Debian packages chromium-headless-shell and poppler-utils (`make setup` does)"


def browser() -> str:
    """The first headless browser on PATH; refused with what to install when there is none."""
    found = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if found is None:
        raise HarnessError(f"no headless browser to print the report with ({', '.join(BROWSERS)}): {INSTALL}")
    return found


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PRINT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HarnessError(f"{argv[0]} failed: {exc}") from exc
    if done.returncode != 0:
        raise HarnessError(f"{argv[0]} exited {done.returncode}: {done.stderr.strip()[-600:]}")
    return done


def print_pdf(page: Path, pdf: Path) -> Path:
    """Print an HTML page to PDF, as the browser's own print would (A4, the page's stylesheet, no header)."""
    with tempfile.TemporaryDirectory(prefix="harness-print-") as profile:  # a fresh profile: no state shared
        _run([browser(), "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
              f"--user-data-dir={profile}", f"--print-to-pdf={pdf}", page.resolve().as_uri()])
    if not pdf.is_file():
        raise HarnessError(f"{page}: the browser printed no PDF")
    return pdf


def page_count(pdf: Path) -> int:
    """The PDF's pages, as poppler's ``pdfinfo`` counts them."""
    if shutil.which("pdfinfo") is None:
        raise HarnessError(f"pdfinfo is not installed: {INSTALL}")
    found = re.search(r"^Pages:\s+(\d+)", _run(["pdfinfo", str(pdf)]).stdout, re.M)
    if found is None:
        raise HarnessError(f"{pdf}: pdfinfo reports no page count")
    return int(found.group(1))


def png_pages(pdf: Path, folder: Path, dpi: int = 80) -> tuple[Path, ...]:
    """Each page of the PDF as ``page-N.png`` in ``folder`` (earlier pages removed first)."""
    if shutil.which("pdftoppm") is None:
        raise HarnessError(f"pdftoppm is not installed: {INSTALL}")
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("page-*.png"):
        old.unlink()
    _run(["pdftoppm", "-png", "-r", str(dpi), str(pdf), str(folder / "page")])
    return tuple(sorted(folder.glob("page-*.png"), key=lambda p: int(p.stem.rpartition("-")[2])))


@dataclass(frozen=True, slots=True)
class Printed:
    """The report printed: where its files are, how many pages it fills, and how long its narrative is."""

    pdf: Path
    pages: int
    narrative_pages: int
    narrative_words: int
    """Words of the narrative as rendered, its tables included."""
    pngs: tuple[Path, ...]


def print_report(report: Path, *, pngs: bool = False) -> Printed:
    """``report.md`` to ``report.pdf`` beside it (and ``pages/page-N.png`` when asked), with the narrative printed
    alone to count its pages."""
    pdf = print_pdf(write_html(report), report.with_suffix(".pdf"))
    narrative_pdf = print_pdf(write_html(report, narrative_only=True), report.with_name("narrative.pdf"))
    return Printed(pdf=pdf, pages=page_count(pdf), narrative_pages=page_count(narrative_pdf),
                   narrative_words=narrative_words(report.read_text()),
                   pngs=png_pages(pdf, report.parent / "pages") if pngs else ())
