"""Rendering: the context it renders is frozen and typed, its sections are numbered in one place, and the templates
only format what it holds (undefined names refused)."""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import pytest

from harness.config import load_matrix
from harness.errors import HarnessError
from harness.plan import Plan, expand
from harness.report.context import ReportContext, build_context
from harness.report.render import REPORT_TEMPLATE, TEMPLATES, environment, render_text, template_variables
from harness.report.sections import SECTIONS, SectionSpec, number_sections
from harness.store import Store
from harness.verdict import write_verdicts

from tests.support.explored_run import EARLIER, EXPLORED_MATRIX, explored_run
from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_failed, store_ok, summary

TEMPLATE_TEXT = {path.name: path.read_text() for path in sorted(TEMPLATES.glob("*.j2"))}


def _stored(write_matrix: Callable[..., Path], tmp_path: Path, *, measured: bool = True) -> tuple[Plan, Store]:
    """A judged run (lock and gate written, as before every report): the first cell measured or failed."""
    plan = expand(load_matrix(write_matrix(BASE_MATRIX)))
    store = Store(tmp_path / "reports", plan.matrix.name, lock_dir=tmp_path / "lock")
    if measured:
        store_ok(store, plan.cells[0], summary(800.0, 20.0))
    else:
        store_failed(store, plan.cells[0])
    write_verdicts(plan, store)
    return plan, store


def _dataclasses_in(context: ReportContext) -> list[Any]:
    """The context, each of its groups, and a row of each kind the tables show."""
    groups = [v for v in template_variables(context).values() if dataclasses.is_dataclass(v)]
    return [context, *groups, context.ran.rows[0], context.ran.rows[0].ttft, *context.recommendations,
            *context.evidence.client.fidelity, *context.repro.engines, *context.repro.models]


def test_the_context_is_frozen(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    context = build_context(*_stored(write_matrix, tmp_path))
    for group in _dataclasses_in(context):
        name = dataclasses.fields(group)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(group, name, None)
    with pytest.raises(TypeError):
        context.sections["cost"] = context.sections["asked"]  # type: ignore[index]  # read-only on purpose
    assert isinstance(context.ran.rows, tuple) and isinstance(context.not_measured, tuple)


def test_the_context_is_typed(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    context = build_context(*_stored(write_matrix, tmp_path))
    for group in _dataclasses_in(context):
        hints = typing.get_type_hints(type(group))
        assert {f.name for f in dataclasses.fields(group)} <= set(hints)
        assert typing.Any not in hints.values(), type(group).__name__


def test_a_run_without_a_lock_is_refused(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX)))
    with pytest.raises(HarnessError, match="no lock for this run"):
        build_context(plan, Store(tmp_path / "reports", plan.matrix.name, lock_dir=tmp_path / "lock"))


def test_sections_are_numbered_in_order_and_references_follow() -> None:
    sections = number_sections("GPU")
    numbered = [s for s in SECTIONS if s.numbered]
    assert [sections[s.key].number for s in numbered] == list(range(1, len(numbered) + 1))
    assert sections["verdict"].heading == "Verdict" and sections["verdict"].number is None
    assert sections["frontiers"].heading == "3. Frontiers: output tok/s per GPU against interactivity"
    assert sections["cost"].ref == "section 4"
    # a section inserted before another renumbers its heading and every reference to it alike
    moved = number_sections("GPU", (SectionSpec("new", "New"), *SECTIONS))
    assert moved["cost"].heading.startswith("5. ") and moved["cost"].ref == "section 5"
    with pytest.raises(ValueError, match="listed twice"):
        number_sections("GPU", (*SECTIONS, SECTIONS[1]))


def test_templates_use_only_generated_section_numbers() -> None:
    used = {key for text in TEMPLATE_TEXT.values() for key in re.findall(r"\bsections\.(\w+)\.", text)}
    assert used == {s.key for s in SECTIONS}  # every section is rendered, and no template names an unknown one
    for name, text in TEMPLATE_TEXT.items():
        assert not re.search(r"^##\s+\d", text, re.M), f"{name}: a hand-numbered heading"
        assert not re.search(r"\bsection \d", text), f"{name}: a hand-typed section reference"


def test_templates_only_format() -> None:
    for name, text in TEMPLATE_TEXT.items():
        for logic in (".append(", "selectattr", "| sort", ".get("):
            assert logic not in text, f"{name}: {logic!r} belongs in the context builder"


@pytest.mark.parametrize("measured", [True, False])
def test_rendered_references_point_at_rendered_headings(write_matrix: Callable[..., Path], tmp_path: Path,
                                                        measured: bool) -> None:
    context = build_context(*_stored(write_matrix, tmp_path, measured=measured))
    text = render_text(context)
    headings = re.findall(r"^## (?:(\d+)\. )?(.+)$", text, re.M)
    rendered = [title for _, title in headings]
    expected = [s.title for s in context.sections.values()]
    assert rendered == [t for t in expected if t in rendered]  # in the list's order
    numbers = [int(n) for n, _ in headings if n]
    assert numbers == list(range(1, len(numbers) + 1))
    refs = {int(n) for n in re.findall(r"\bsection (\d+)\b", text)}
    assert refs and refs <= set(numbers)
    if not measured:
        assert f"No cell of it was measured; {context.sections['recommendation'].ref} says why." in text
        assert "## 2. The recommendation and its defence" in text


def test_templates_render_with_strict_undefined(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    env = environment()
    assert env.undefined is jinja2.StrictUndefined
    context = build_context(*_stored(write_matrix, tmp_path))
    assert render_text(context).startswith("# Capstone report: t\n")
    for missing in ("repro", "evidence", "sections"):
        variables = {k: v for k, v in template_variables(context).items() if k != missing}
        with pytest.raises(jinja2.UndefinedError):
            env.get_template(REPORT_TEMPLATE).render(variables)


def test_the_gate_section_shows_the_history_and_its_steps(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    """Eight earlier runs at 1.5x this run's throughput, one at this run's: the step has held two runs, so the
    report's History paragraph names it, lists it, and links the trend figure."""
    from harness.calibration import Calibration
    from harness.history import RunIdentity, record
    from harness.pipeline import render
    from harness.result_records import CellResult
    from harness.verdict import build_lock

    plan = expand(load_matrix(write_matrix(BASE_MATRIX)))
    store = Store(tmp_path / "reports", plan.matrix.name, lock_dir=tmp_path / "lock")
    cell, lock = plan.cells[0], build_lock(plan, store)
    for i, level in enumerate([1.5, 1.52, 1.48, 1.51, 1.49, 1.5, 1.53, 1.47, 1.0]):
        earlier = RunIdentity(f"r{i}", plan.matrix.name, lock.matrix_sha256, lock.hardware, "0.1.0", None,
                              f"2026-11-{i + 1:02d}T00:00:00+00:00")
        result = CellResult(cell_id=cell.cell_id, label=cell.label, server_id="s", status="ok",
                            started_at=earlier.started_at, finished_at=earlier.started_at,
                            summary=summary(1000.0 * level, 10.0 / level))
        record(store.history_url, earlier, [result], Calibration())
    store.begin_run(fresh=True)
    for c in plan.cells:
        store_ok(store, c, summary(1000.0, 10.0))
    text = render(plan, store, record_run=True).read_text()
    paragraph = next(line for line in text.splitlines() if "**History.**" in line)
    assert "holds 10 run(s) of this matrix on this machine (this run added 2 cell(s))" in paragraph
    row = r"\| " + re.escape(cell.label) + r" \| output_throughput \| -3\d\.\d% \| 9 of 10 \| .* \| regressed \|"
    assert re.search(row, text)
    assert "(plots/history-t.png)" in text and (store.plots_dir / "history-t.png").exists()
    after = text.split(paragraph, 1)[1]
    assert "\n\n## " in after.split("(plots/history-t.png)", 1)[1][:200]  # a blank line before the next heading


def test_the_explorer_is_written_beside_the_report(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    """Rendering the report writes the explorer page from the same context, with the history's earlier runs."""
    from harness.pipeline import render

    plan, store = explored_run(write_matrix(EXPLORED_MATRIX), tmp_path)
    report = render(plan, store, record_run=True)
    assert store.explorer_path == report.with_name("explorer.html")
    page = store.explorer_path.read_text()
    assert page.startswith("<!DOCTYPE html>") and 'id="frontier"' in page and 'id="latency-1"' in page
    assert all(commit in page for _, commit, _ in EARLIER)
