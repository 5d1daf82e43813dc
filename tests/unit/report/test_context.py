"""The capstone report renders stored results: verdict, defence, frontiers, cost, gate, lock; empty sections say so."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import jinja2
import pytest

from harness.config import load_matrix
from harness.load import RequestRecord
from harness.metrics import summarize
from harness.parity import ParityComparison, cell_parity, write_cell_parity
from harness.pipeline import render as judge_and_render
from harness.plan import Cell, Plan, expand
from harness.report.formatting import usd
from harness.report.html_page import markdown_html
from harness.report.render import REPORT_TEMPLATE, environment
from harness.result_records import CellResult
from harness.servers.prometheus import SpeculationStats
from harness.store import Store, now_iso
from harness.verdict import build_lock, promote, write_baseline, write_lock

from tests.support.hosts import another_machine
from tests.support.matrices import BASE_MATRIX
from tests.support.stored_cells import store_failed, store_launches, store_ok, summary


def records(itl_s: float, n: int = 4, tokens: int = 8) -> list[RequestRecord]:
    chunks = tuple(0.05 + itl_s * i for i in range(tokens))
    return [RequestRecord(index=i, warmup=False, input_tokens=16, max_tokens=tokens, send_time=i * 0.1,
                          end_time=i * 0.1 + chunks[-1], chunk_times=chunks, chunk_tokens=(1,) * tokens,
                          output_tokens=tokens) for i in range(n)]


def ok(cell: Cell, itl_s: float, spec: SpeculationStats | None = None) -> CellResult:
    summary = summarize(records(itl_s), duration_s=1.0, speculation=spec)
    return CellResult(cell_id=cell.cell_id, label=cell.label, server_id=cell.server.server_id, status="ok",
                      started_at=now_iso(), finished_at=now_iso(), summary=summary)


def render(plan: Plan, store: Store, tmp_path: Path) -> str:
    store.lock_dir = tmp_path / "lock"
    return judge_and_render(plan, store).read_text()


def test_report_pairs_speculation_with_off(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX + "  speculation: [off, mtp]\n")))
    store = Store(tmp_path, plan.matrix.name)
    by_label = {c.label: c for c in plan.cells}
    spec = SpeculationStats(drafts=100, draft_tokens=100, accepted_tokens=40, acceptance_rate=0.4,
                           acceptance_length=1.4, per_position=(0.4,))
    store.write_result(by_label["m/vllm/bf16/tp1/off/w/c1"], ok(by_label["m/vllm/bf16/tp1/off/w/c1"], 0.010))
    store.write_result(by_label["m/vllm/bf16/tp1/mtp1/w/c1"],
                       ok(by_label["m/vllm/bf16/tp1/mtp1/w/c1"], 0.020, spec))
    store_failed(store, by_label["m/vllm/bf16/tp1/off/w/c2"])
    text = render(plan, store, tmp_path)
    assert "2 measured, 1 failed, 1 not run" in text
    # mtp decodes at twice the ITL of off here, so its TPOT speedup is 0.5x
    pair_row = next(line for line in text.splitlines() if line.startswith("| m | vllm | bf16 | mtp1 | 1 |"))
    assert "| 0.50× |" in pair_row and "| 0.400 | 1.40 | 0.400 |" in pair_row
    assert "### m/vllm/bf16/tp1/off/w/c2" in text and "server exited while the cell ran" in text
    assert "- m/vllm/bf16/tp1/mtp1/w/c2" in text  # not run yet
    assert "| `tpot_ms` | ms | lower |" in text
    # a failed cell is failed in every table, and never recommended
    assert text.count("| failed |") >= 2 and "ship `m/vllm/bf16/tp1/off` at concurrency [1](#a-rec-m-w)" in text
    assert "| m · w | `vllm/bf16/off` | 2 | – | – | failed: not a point |" in text


CAPSTONE = BASE_MATRIX.replace("concurrency: [1, 2]", "concurrency: [1, 4, 16]") + """\
  speculation: ["off", {method: mtp, k: 2}]
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 8}
slo: {ttft_p99_ms: 500, tpot_p50_ms: 25}
"""
FIGURES = {("off", 1): (800.0, 20.0), ("off", 4): (2400.0, 25.0), ("off", 16): (6400.0, 40.0),
           ("mtp2", 1): (1600.0, 10.0), ("mtp2", 4): (4000.0, 16.0), ("mtp2", 16): (9600.0, 32.0)}


def _list_after(html: str, paragraph: str) -> list[str]:
    """The items of the list that follows the paragraph starting with ``paragraph``, as rendered HTML."""
    after = html[html.rindex("<p>", 0, html.index(paragraph)):]
    listed = re.match(r"<p>.*?</p>\s*<ul>(.*?)</ul>", after, re.S)
    assert listed, f"no list after {paragraph!r}"
    return re.findall(r"<li>(.*?)</li>", listed.group(1), re.S)


def _capstone(write_matrix: Callable[..., Path], tmp_path: Path, extra: str = "") -> tuple[Plan, Store]:
    plan = expand(load_matrix(write_matrix(CAPSTONE + extra)))
    store = Store(tmp_path / "reports", plan.matrix.name)
    for cell in plan.cells:
        out, tpot = FIGURES[(cell.server.speculation.label, cell.concurrency)]
        store_ok(store, cell, summary(out, tpot, acceptance_rate=None if cell.server.speculation.is_off else 0.7))
    return plan, store


def test_capstone_narrative(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan, store = _capstone(write_matrix, tmp_path)
    text = render(plan, store, tmp_path)
    # the verdict, first: mtp2 at c4 is the fastest cell with median TPOT <= 25 ms; the runner-up is off at c4
    assert text.index("## Verdict") < text.index("# Appendices") < text.index("## 1. What was asked")
    assert "| m · w | **`vllm/bf16/tp1/mtp2` at c4** | **[$3.06](#a-cost)** | `vllm/bf16/tp1/off` at c4: [67% " \
           "dearer](#a-rec-m-w), noise unknown (one launch each) | not measured | TTFT p99 [60.0](#a-rec-m-w) of " \
           "[500](#a-slo); TPOT median [16.0](#a-rec-m-w) of [25](#a-slo) |" in text
    assert "The recommendation is to ship `m/vllm/bf16/tp1/mtp2` at concurrency [4](#a-rec-m-w): of the [6 measured " \
           "cells](#a-rec-m-w), the cheapest per output token that meets the SLO." in text
    assert "- **Throughput:** [500.0 output tok/s per GPU](#a-cost), against [300.0](#a-rec-m-w) for the runner-up " \
           "`vllm/bf16/tp1/off` at c4." in text
    assert "| `vllm/bf16/off` | its cheapest qualifying cell (c4) costs 67% more per output token than the ship " \
           "recipe; noise unknown (one launch each), not a finding |" in text
    # one launch per cell: no comparison is a finding, and the verdict says so
    assert "- **Launch noise.** Every comparison rests on one server launch per cell, so none of the report's [7 " \
           "comparisons](#a-comparisons) has an interval" in text
    assert "The runner-up costs 67% more per output token than the ship recipe; noise unknown (one launch each), " \
           "not a finding. Cost does not separate the two yet: each must run on several server launches" in text
    # inputs are labelled as inputs, with their source
    assert "Priced as 8 × B200 (GPU) per replica at $5.50 per GPU-hour" in text and "capstone lecture §5.2" in text
    assert "16 × B200 at $5.50/GPU-hour serving 13,000 tok/s costs $1.88/MTok" in text
    # the narrative's figures and the frontier plot inline; matched comparisons grouped per pair of recipes
    for figure in ("plots/narrative-cost.png", "plots/narrative-levers.png", "plots/frontier-m-w.png"):
        assert f"]({figure})" in text and (store.dir / figure).read_bytes()[:4] == b"\x89PNG"
    assert "- `mtp2` against `off` on m · w: 51% to 87% cheaper per token across 31.2–50.0 tok/s/user (no interval: " \
           "one launch each)." in text
    assert "- **speculation**: on m · w, `mtp2` is [51% to 87% cheaper](#a-comparisons) than `off` across " \
           "[31.2–50.0 tok/s/user](#a-comparisons) ([no interval: one launch each](#a-comparisons))." in text
    assert "| m · w | `vllm/bf16/mtp2` | `vllm/bf16/off` | 40.0 | 1,004.0 ($1.52, interpolated between c16 and c4) " \
           "| 300.0 ($5.09, measured at c4) | +70% | noise unknown (one launch each), not a finding |" in text
    # acceptance and speedup against concurrency, inline, with where speculation stops paying
    assert "![acceptance and speedup against concurrency](plots/speculation-t.png)" in text
    assert (store.dir / "plots" / "speculation-t.png").read_bytes()[:4] == b"\x89PNG"
    assert "every concurrency measured (up to 16)" in text
    assert "| `mtp2` (bf16) | m · w | [2.00×](#a-speculation) at c1, [1.25×](#a-speculation) at c16 | " \
           "[2.00×](#a-speculation), [1.50×](#a-speculation) | [0.70](#a-speculation) |" in text
    # levers beside the capstone lecture's claims; tok/s/MW from the table's B200 watts
    assert "| speculation | off → mtp2 | 3 | -40% (-50% to -33%) | – | noise unknown (one launch each) | MTP / " \
           "EAGLE: -55% to -40% | noise unknown (one launch each), not a finding (the median alone: agrees) |" in text
    assert "| 62.5 | 1,004.0 |" not in text and "| 230,415 |" in text  # 500 tok/s/GPU / 2170 W
    # sections without data say so
    assert "accuracy parity was not measured" in text and "- Accuracy parity: the matrix has no parity section." in text
    assert "No profile was captured for this matrix's cells" in text
    assert "The gate did not run: no baseline at" in text and "- **Regression gate:** not run ([why](#a-gate))." in text
    assert "no lock is committed at" in text
    assert (store.dir / "lock.json").exists()


def test_matched_comparisons_render_as_one_list_item_per_pair(write_matrix: Callable[..., Path],
                                                              tmp_path: Path) -> None:
    """The defect a reader saw: the comparisons' bullets lost their line breaks and ran into one paragraph
    ("...per CPU machine.- At 130.5 tok/s/user ..."). A CommonMark renderer must see one <li> per pair of recipes."""
    plan = expand(load_matrix(write_matrix(CAPSTONE.replace('["off", {method: mtp, k: 2}]',
                                                            '["off", {method: mtp, k: 2}, {method: mtp, k: 1}]'))))
    store = Store(tmp_path / "reports", plan.matrix.name)
    figures = {**FIGURES, **{("mtp1", c): (out * 0.8, tpot * 1.1) for (s, c), (out, tpot) in FIGURES.items()
                             if s == "mtp2"}}
    for cell in plan.cells:
        out, tpot = figures[(cell.server.speculation.label, cell.concurrency)]
        store_ok(store, cell, summary(out, tpot, acceptance_rate=None if cell.server.speculation.is_off else 0.7))
    html = markdown_html(render(plan, store, tmp_path))
    # three pairs (mtp2 / off, mtp1 / off, mtp1 / mtp2), each one item with one sentence, however many points
    items = _list_after(html, "At matched interactivity, each pair of recipes")
    assert len(items) == 3, items
    assert all(item.count(" against ") == 1 and "\n- " not in item and ".- " not in item for item in items)
    # the narrative: one item per axis, each challenger against the axis's baseline only
    axes = _list_after(html, "At matched interactivity, read off the frontiers")
    assert len(axes) == 1 and axes[0].startswith("<strong>speculation</strong>") and axes[0].count(" than ") == 2
    assert not re.search(r"<p>[^<]*\.- ", html)  # no bullet run into the paragraph before it


LEAD, NOISY, REVERSED = (0.98, 1.0, 1.02), (0.6, 1.0, 1.5), (1.5, 1.0, 0.6)


@pytest.mark.parametrize(("off", "mtp2", "runner_up", "verdict"), [
    (LEAD, LEAD, "[1.67x [1.59, 1.74] over 3 and 3 launches](#a-rec-m-w), outside the launch noise |",
     "- **Launch noise.** [7 of 7](#a-comparisons) comparisons clear it, every runner-up margin among them."),
    (NOISY, REVERSED, "[1.67x [0.59, 4.72] over 3 and 3 launches](#a-rec-m-w), a tie inside the launch noise |",
     "- **Launch noise.** [2 of 7](#a-comparisons) comparisons clear it; cost does not settle ship against "
     "runner-up for m · w — tie (inside the launch noise)."),
])
def test_comparisons_carry_their_launch_noise(write_matrix: Callable[..., Path], tmp_path: Path,
                                              off: tuple[float, ...], mtp2: tuple[float, ...], runner_up: str,
                                              verdict: str) -> None:
    plan = expand(load_matrix(write_matrix(CAPSTONE)))
    store = Store(tmp_path / "reports", plan.matrix.name)
    for cell in plan.cells:
        out, tpot = FIGURES[(cell.server.speculation.label, cell.concurrency)]
        is_off = cell.server.speculation.is_off
        store_launches(store, cell, [summary(out * f, tpot, acceptance_rate=None if is_off else 0.7)
                                     for f in (off if is_off else mtp2)])
    text = render(plan, store, tmp_path)
    # the same medians as with one launch, so the same recipe ships; how sure the margin is follows the launches
    assert "ship `m/vllm/bf16/tp1/mtp2` at concurrency [4](#a-rec-m-w):" in text
    assert f"| **[$3.06](#a-cost)** | `vllm/bf16/tp1/off` at c4: {runner_up}" in text
    assert verdict in text
    lever = next(line for line in text.splitlines() if line.startswith("| speculation | off → mtp2 |"))
    at_slo = next(line for line in text.splitlines() if line.startswith("| m · w | `vllm/bf16/mtp2` | `vllm/bf16/off` "
                                                                        "| 40.0 |"))
    assert at_slo.endswith("over 3 and 3 launches, outside the launch noise |")  # 3.3x apart clears even 2.5x noise
    if off == LEAD:
        assert "| [-52%, -30%] | cheaper, outside the launch noise |" in lever
        assert "Cost does not separate the two yet" not in text
    else:
        assert "| tie (inside the launch noise) |" in lever and lever.endswith("| inconclusive: the launch interval "
                                                                              "reaches outside the claimed range |")
        assert "Cost does not separate the two yet: more launches per configuration would tell" in text
        assert "- **Comparisons inside the noise.** [5 of 7](#a-comparisons) comparisons are not findings ([5 " \
               "ties](#a-comparisons), [0 with one launch each](#a-comparisons))" in text
        assert "(2 of 3 outside the launch noise, 1 inside it)" in text


def test_gate_parity_profiles_and_drift_when_present(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan, store = _capstone(write_matrix, tmp_path, "parity: {max_drop_pp: 1.0}\n")
    for cell in plan.cells:  # the baseline needs three launches of each configuration
        stored = store.read_result(cell)
        assert stored is not None and stored.summary is not None
        store_launches(store, cell, [stored.summary] * 3)
    lock = build_lock(plan, store)
    write_lock(lock.model_copy(update={"seeds": {"server.seed": 9, "workloads.w.seed": 0}}),
               tmp_path / "lock" / f"{plan.matrix.name}.lock.json")
    write_baseline(promote(plan, store, lock), tmp_path / "lock" / f"{plan.matrix.name}.baseline.json")
    slow = next(c for c in plan.cells if c.label == "m/vllm/bf16/tp1/off/w/c4")
    store_launches(store, slow, [summary(1800.0, 25.0)] * 3)  # 25% less throughput than the baseline
    comparison = ParityComparison(
        passed=True, delta_pp=0.0, overall_accuracy=0.81, reference_accuracy=0.81, reason="within the limit",
        rule="fails when Δ < -1 pp and the exact McNemar p < 0.05", decoding="free", reference_decoding="free",
        max_drop_pp=1.0, alpha=0.05, paired_items=40, right_to_wrong=2, wrong_to_right=2, mcnemar_p=1.0,
        ci_low_pp=-5.0, ci_high_pp=5.0, agreement=0.9, malformed_rate=0.05)
    write_cell_parity(cell_parity({"free": comparison}), store.parity_verdict_path(slow))
    profile = tmp_path / "profiles" / plan.matrix.name / slow.cell_id
    profile.mkdir(parents=True)
    (profile / "summary.md").write_text("| group | share |\n|---|--:|\n| MoE GEMM | 61% |\n")
    text = render(plan, store, tmp_path)
    assert "- **Regression gate** against the committed baseline: **FAIL**, [1 failing](#a-gate) and [" in text
    assert "| regressed | m/vllm/bf16/tp1/off/w/c4 | output_throughput | 2,400.00 | 1,800.00 | -25.0% [-25.0%, " \
           "-25.0%] |" in text
    assert "The largest moves against the baseline:" in text and "3 or more launches of each configuration" in text
    assert "- `seeds.server.seed`: locked `9`, now `0`" in text
    assert ("| m/vllm/bf16/tp1/off | free | 81.0% | 81.0% | 0.0 | [-5.0, 5.0] | 2 | 2 | 1.000 | 5.0% | 90.0% | – "
            "| – | pass |") in text  # a comparison stored without the power figure shows none
    assert "**Gate rule:** fails when Δ < -1 pp and the exact McNemar p < 0.05." in text
    # the capstone lecture's shape: one row per server, multi-turn and grammar columns say they did not run
    assert ("| m/vllm/bf16/tp1/off | bf16 | 81.0% | 0.0 [-5.0, 5.0] | not run | – | not run | – | 5.0% / – | – "
            "| pass |") in text
    assert "| MoE GEMM | 61% |" in text and "No `summary.md` in the capture folder" not in text
    # bf16 is the reference precision: parity does not block it, and mtp2 still ships
    assert "ship `m/vllm/bf16/tp1/mtp2` at concurrency [4](#a-rec-m-w)" in text
    baseline = tmp_path / "lock" / f"{plan.matrix.name}.baseline.json"
    baseline.unlink()  # a baseline of another CPU only: its timings are shown, not judged
    other = another_machine(lock.hardware)
    write_baseline(promote(plan, store, lock).model_copy(update={"hardware": other}), baseline)
    text = render(plan, store, tmp_path)
    assert f"compared with the one measured on {other.fingerprint}: only the exact checks (errors, failed cells) are " \
           "judged" in text


def test_inconclusive_figures_point_at_a_paired_check_against_the_baselines_commit(
        write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    """Launches too noisy for the tolerance leave the gate inconclusive; the report says a baseline from another
    hour carries that hour's drift, and names the paired check against the commit that made the baseline."""
    plan = expand(load_matrix(write_matrix(BASE_MATRIX)))
    store = Store(tmp_path / "reports", plan.matrix.name, lock_dir=tmp_path / "lock")
    for cell in plan.cells:
        store_launches(store, cell, [summary(800.0 * f, 20.0 / f) for f in (0.7, 1.0, 1.4)])
    lock = build_lock(plan, store)
    write_baseline(promote(plan, store, lock), store.baseline_path())
    text = render(plan, store, tmp_path)
    revision = lock.harness.commit[:12] if lock.harness.commit else "REV"
    assert ("a change smaller than that can hide in an inconclusive figure. A baseline from another hour carries that "
            "hour's machine drift; re-measuring the baseline's code beside this one, in paired rounds on this "
            f"machine, settles them: `harness regress matrices/t.yaml --against {revision}`") in text
    assert "harness compare A.yaml B.yaml" not in text


def test_templates_refuse_undefined_values(tmp_path: Path) -> None:
    with pytest.raises(jinja2.UndefinedError):
        environment().get_template(REPORT_TEMPLATE).render({})


@pytest.mark.parametrize(("value", "text"), [(None, "–"), (1.88, "$1.88"), (0.0654, "$0.065"), (0.00123, "$0.00123"),
                                             (1234.5, "$1,234.50")])
def test_usd(value: float | None, text: str) -> None:
    assert usd(value) == text


def test_nothing_measured_says_so(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(BASE_MATRIX)))
    store = Store(tmp_path / "reports", plan.matrix.name)
    store_failed(store, plan.cells[0], "server failed to start: no such model")
    text = render(plan, store, tmp_path)
    assert "0 measured, 1 failed, 1 not run" in text
    assert "| m · w | nothing to ship | – | – |" in text
    assert "Nothing ships. No cell of it was measured; section 2 says why." in text
    assert "| `vllm/bf16/off` | no measured cell: 1 failed (server failed to start: no such model) |" in text
    assert "No cell was measured, so there are no frontiers." in text
    assert "No two measured cells differ on exactly one axis, so no lever was measured." in text
    assert "- **Missing cells.** [1 failed](#a-throughput) and [1 not run](#a-throughput); neither is ever a " \
           "candidate." in text


def test_report_shows_the_client_the_server_view_and_the_crosscheck(write_matrix: Callable[..., Path],
                                                                   tmp_path: Path) -> None:
    from harness.load.cpu_watch import ClientLoad
    from harness.servers.prometheus import HistogramStats, PrefixCacheStats, ServerStats

    plan = expand(load_matrix(write_matrix(BASE_MATRIX)))
    store = Store(tmp_path, plan.matrix.name)
    busy = ClientLoad(cpu_s=9.0, cpu_util=0.97, loop_lag_p99_ms=12.0, loop_lag_max_ms=40.0, bottleneck=True,
                      reason="client CPU at 97% of a core")
    server = ServerStats(ttft_ms=HistogramStats(count=4, mean=40.0, p50=38.5, p90=60.0, p99=70.0),
                         tpot_ms=HistogramStats(count=4, mean=3.21, p50=5.0, p90=7.5, p99=10.0),  # p50: an edge
                         itl_ms=HistogramStats(count=252, mean=19.8, p50=19.0, p90=25.0, p99=30.0),
                         prefix_cache=PrefixCacheStats(queries=1000, hits=250, hit_rate=0.25))
    first, second = plan.cells[0], plan.cells[1]
    store_ok(store, first, summary(800.0, 20.0).model_copy(update={"client": busy, "server": server}))
    stalled = ClientLoad(cpu_s=0.1, cpu_util=0.01, loop_lag_p99_ms=900.0, loop_lag_max_ms=1200.0, bottleneck=False,
                         reason="it waited for a core: 900.0 ms at p99", starved_lag_p99_ms=900.0, starved=True)
    store_ok(store, second, summary(900.0, 20.0).model_copy(update={"client": stalled}))
    (store.dir / "crosscheck").mkdir()
    (store.dir / "crosscheck" / "crosscheck.json").write_text(json.dumps({
        "spec": {"workload": {"kind": "random", "input_tokens": 128, "output_tokens": 64}, "concurrency": 4,
                 "rounds": 5},
        "ratios": {"median_ttft_ms": 0.81, "median_tpot_ms": 0.99}, "notes": ["stamps differ"],
        "anchors": {"ours": {"mean_itl_ms": 1.001}, "vllm": {"mean_itl_ms": 1.02}},
        "anchored_ratios": {"mean_itl_ms": 0.981}}))
    text = render(plan, store, tmp_path)
    assert "**1 cell(s) flagged as possibly client-bound**" in text
    assert f"- {first.label}: client CPU at 97% of a core" in text
    assert "**1 cell(s) measured while the client waited for cores.**" in text
    assert f"- {second.label}: it waited for a core: 900.0 ms at p99" in text
    row = next(line for line in text.splitlines() if line.startswith(f"| {first.label} | 97.0% |"))
    assert "| 12.0 |" in row and "/ 40.0 |" in row and "/ 3.21 |" in row and "| 1.010 |" in row and "| 25.0% |" in row
    assert "/ 38.5 |" not in row and "/ 5.00 |" not in row  # no bucket-interpolated quantile reads as a statistic
    assert "`median_ttft_ms` 0.810, `median_tpot_ms` 0.990." in text and "- stamps differ" in text
    assert "ours\n`mean_itl_ms` 1.001; vLLM's\n`mean_itl_ms` 1.020; ratio ours / vLLM's\n`mean_itl_ms` 0.981." in text
