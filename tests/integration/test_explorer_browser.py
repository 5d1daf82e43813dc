"""The explorer page in a real browser: Debian's headless Chromium (the one the report's PDF is printed with,
``harness.report.pdf_pages.browser``) driven by Playwright, opening ``explorer.html`` from disk with every network
request refused. Each chart draws its points, hovering a cell shows its prediction, the run menu overlays an earlier
run and then another, and the console stays clean; the screenshot is kept under ``build/test-artifacts/``."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.pipeline import render
from harness.report import pdf_pages

from tests.support.explored_run import EARLIER, EXPLORED_MATRIX, FIGURES, REQUESTS, explored_run

ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts"
"""Where the screenshot is kept after the test (git-ignored; docs/report/explorer.png is taken from it)."""

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not any(shutil.which(b) for b in pdf_pages.BROWSERS),
                       reason="no headless browser (make setup-test installs chromium-headless-shell)"),
]
playwright = pytest.importorskip("playwright.sync_api", reason="make setup-test installs playwright (the test extra)")

POINTS = "#frontier .scatterlayer .point"


def test_the_explorer_draws_its_charts_and_overlays_earlier_runs(write_matrix: Callable[..., Path],
                                                                  tmp_path: Path) -> None:
    plan, store = explored_run(write_matrix(EXPLORED_MATRIX), tmp_path)
    render(plan, store, record_run=True)
    cells = len(FIGURES)
    errors: list[str] = []
    fetched: list[str] = []
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=pdf_pages.browser(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                       else (fetched.append(route.request.url), route.abort()))
            page.goto(store.explorer_path.as_uri())
            page.wait_for_function(f"document.querySelectorAll('{POINTS}').length === {cells}")
            # each latency chart: a point per request kept, TTFT and TPOT, for each cell
            assert page.locator("#latency-1 .scatterlayer .point").count() == cells * 2 * REQUESTS

            # Plotly's drag layer lies over the points and takes the mouse: hover where the point is, regardless
            page.locator(POINTS).first.hover(force=True)
            hover = page.locator("#frontier .hoverlayer .hovertext").first.text_content() or ""
            assert "predicted (aiconfigurator)" in hover and "measured ÷ predicted" in hover

            # the newer run (listed first) overlays every cell, the older lacks one
            for (_, commit, _), overlaid in zip(reversed(EARLIER), (cells, cells - 1), strict=True):
                page.locator("#frontier .updatemenu-header").click()
                page.locator("#frontier .updatemenu-dropdown-button", has_text=commit).click()
                page.wait_for_function(f"document.querySelectorAll('{POINTS}').length === {cells + overlaid}")
                page.wait_for_function("!document.querySelector('#frontier .updatemenu-dropdown-button')")  # folded

            page.locator(POINTS).first.hover(force=True)
            page.locator("#frontier .hoverlayer .hovertext").first.wait_for()
            screenshot = page.screenshot(path=tmp_path / "explorer.png", full_page=True)
        finally:
            browser.close()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "explorer.png").write_bytes(screenshot)
    assert screenshot[:8] == b"\x89PNG\r\n\x1a\n"
    assert not errors, errors
    assert not fetched, f"the page asked the network for {fetched}"
