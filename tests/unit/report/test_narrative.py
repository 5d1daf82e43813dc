"""The narrative a reviewer signs off: the decision in its first table, every number linked to the appendix table it
comes from, the defence stating each of throughput, latency, parity and cost with its interval."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from harness.config import load_matrix
from harness.pipeline import render
from harness.plan import expand
from harness.report.html_page import split_report
from harness.result_records import SearchProbe, SearchRecord
from harness.store import Store

from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_ok, summary

LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(#([\w-]+)\)")
"""A link to an id in the page; its text may hold an interval in brackets (``[1.67x [1.59, 1.74]](#a-rec-m-w)``)."""


def unlinked_numbers(markdown: str) -> list[str]:
    """The numbers a text states outside a link to its source: identifiers (``c16``, ``tiny-deepseek-v3``, code
    spans), cross-references (``section 2``) and the confidence level (95%, a method setting) aside."""
    text = re.sub(r"`[^`]*`|!\[[^\]]*\]\([^)]*\)|<!--.*?-->", " ", markdown)
    text = LINK.sub(" ", text)
    text = re.sub(r"\bsection \d+\b|\b95%", " ", text)
    return re.findall(r"(?<![\w.\-/])[+\-]?\d[\d,.]*%?(?![\w\-/])", text)


def test_every_number_in_the_narrative_links_to_its_table(capstone_report: Path) -> None:
    text = capstone_report.read_text()
    narrative, appendices = split_report(text)
    assert unlinked_numbers(narrative) == []
    assert unlinked_numbers("TTFT 40 ms, [12 ms](#a-x), c16, `k=3`, section 4") == ["40"]  # the check itself
    ids = set(re.findall(r'<a id="([\w-]+)"></a>', appendices))
    assert set(LINK.findall(narrative)) <= ids  # and every link lands on an appendix table


def test_the_first_table_holds_the_decision(capstone_report: Path) -> None:
    narrative, _ = split_report(capstone_report.read_text())
    verdict = narrative[narrative.index("## Verdict"):narrative.index("## The question")]
    row = next(line for line in verdict.splitlines() if line.startswith("| m · w |"))
    # the recipe, its $/MTok, its margin over the runner-up with the interval, the parity verdict, the SLO
    assert "**`vllm/bf16/tp1/mtp2` at c4**" in row and "**[$3.06](#a-cost)**" in row
    assert "`vllm/bf16/tp1/off` at c4: [1.67x [1.59, 1.74] over 3 and 3 launches](#a-rec-m-w), outside the launch " \
           "noise" in row
    assert "| reference precision: passes by definition |" in row and "of [500](#a-slo)" in row


def test_the_defence_states_each_figure_with_its_spread(capstone_report: Path) -> None:
    narrative, _ = split_report(capstone_report.read_text())
    assert "The recommendation is to ship `m/vllm/bf16/tp1/mtp2` at concurrency [4](#a-rec-m-w): of the [6 measured " \
           "cells](#a-rec-m-w), the cheapest per output token that meets the SLO and passes parity." in narrative
    assert "- **Throughput:** [500.0 output tok/s per GPU](#a-cost), its [3 launches](#a-fidelity) ranging " \
           "[490.0–510.0](#a-fidelity), against [300.0](#a-rec-m-w) for the runner-up" in narrative
    assert "- **Parity:** `bf16` is the reference precision, so it passes by definition." in narrative
    assert "The runner-up costs [67% more](#a-rec-m-w) per token: [$/MTok 1.67x [1.59, 1.74] over 3 and 3 " \
           "launches, outside the launch noise](#a-rec-m-w)." in narrative
    # the levers against the capstone lecture's claims, and the matched comparisons one sentence per axis
    assert "| [speculation: off → mtp2](#a-levers) | [3](#a-levers) | [-40%](#a-levers)" in narrative
    assert "- **speculation**: on m · w, `mtp2` is [51% to 87% cheaper](#a-comparisons) than `off`" in narrative


def test_an_slo_search_states_the_capacity_inside_the_slo(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    matrix = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [1, {search: slo, min: 1, max: 8}]") \
        + "slo: {tpot_ms: 50}\n"
    plan = expand(load_matrix(write_matrix(matrix)))
    store = Store(tmp_path / "reports", plan.matrix.name, lock_dir=tmp_path / "lock")
    store_ok(store, plan.cells[0], summary(100.0, 10.0))
    (search,) = plan.searches
    probes = []
    for value, tpot in ((1, 10.0), (2, 20.0), (4, 45.0), (8, 90.0)):
        probe = search.probe(value)
        store_ok(store, probe, summary(100.0 * value, tpot))
        probes.append(SearchProbe(value=value, cell_id=probe.cell_id, meets=tpot * 1.2 <= 50))
    store.write_search(SearchRecord(search_id=search.search_id, label=search.label, axis=search.axis,
                                    probes=tuple(probes), answer=2, stopped="bracketed"))
    narrative, appendices = split_report(render(plan, store).read_text())
    assert "- **Capacity inside the SLO:** the search on `m/vllm/bf16/tp1/off` carried concurrency [2](#a-search) " \
           "inside it, at [$0.278/MTok](#a-search) of output, a point reading on one launch per probe." in narrative
    assert '<a id="a-search"></a>' in appendices and unlinked_numbers(narrative) == []


def test_recipes_whose_frontiers_do_not_overlap_are_named_once(write_matrix: Callable[..., Path], tmp_path: Path
                                                              ) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX + "  speculation: [off, mtp]\n")))
    store = Store(tmp_path / "reports", plan.matrix.name, lock_dir=tmp_path / "lock")
    for cell in plan.cells:  # mtp1 decodes ten times faster: no interactivity in common with off
        off = cell.server.speculation.is_off
        store_ok(store, cell, summary(100.0 * cell.concurrency, 2.0 if off else 20.0, acceptance_rate=None if off
                                      else 0.5))
    narrative, appendices = split_report(render(plan, store).read_text())
    assert "- **speculation**: on m · w, `mtp1` does not overlap `off` in interactivity, so it is not compared." \
        in narrative
    assert "- Not compared, their frontiers overlapping by less than 5% in interactivity: `mtp1` and `off` on m · w." \
        in appendices


def test_the_reference_states_its_rerun(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    from harness.parity import ParityStage, write_run
    from harness.parity.parity_runs import RERUN

    from tests.support.bfcl_wire import fake_run

    def narrative(min_power: float, out: Path) -> str:
        parity = f"parity: {{max_drop_pp: 1.0, min_power: {min_power}}}\n"
        plan = expand(load_matrix(write_matrix(BASE_MATRIX + parity)))
        store = Store(out / "reports", plan.matrix.name, lock_dir=out / "lock")
        for cell in plan.cells:
            store_ok(store, cell, summary(100.0 * cell.concurrency, 10.0))
        (group,) = plan.groups
        answers = {f"simple_python_{i}": i < 30 for i in range(40)}
        for decoding in ("free", RERUN):
            write_run(fake_run(answers), store.parity_run_path(group.server.server_id, decoding))
        assert ParityStage(plan.matrix.parity, store).judge(plan) == 1
        return split_report(render(plan, store).read_text())[0]

    assert "- **Parity:** `bf16` is the reference precision, so it passes by definition; its rerun against its " \
           "first run passed, Δ [0.0 pp [0.0, 0.0]](#a-parity)." in narrative(0.0, tmp_path / "a")
    # 40 items cannot see a 5-point drop with 80% power: the same rerun is no finding by the default rule
    assert "its rerun against its first run inconclusive, Δ [0.0 pp [0.0, 0.0]](#a-parity) (no drop seen, but the " \
           "`free` sample of 40 items had [1.4%](#a-parity) power against a 5-point drop: not a finding)." \
           in narrative(0.8, tmp_path / "b")
