"""The cross-check's result on figures chosen by hand: ratios of medians over rounds, anchors to the server's own
histograms, the stored file read back, and the printed table."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from harness.config import RandomWorkload
from harness.crosscheck_result import (
    DEFINITIONAL_NOTES,
    FIGURES,
    ClientFigures,
    CrosscheckResult,
    CrosscheckSpec,
    format_result,
    read_crosscheck,
    write_crosscheck,
)
from harness.store import Store

SPEC = CrosscheckSpec(base_url="http://h:1", model="m", tokenizer_dir=Path("/tok"), concurrency=2, rounds=3,
                      workload=RandomWorkload(input_tokens=8, output_tokens=5, num_requests=8))


def _figures(client: str, round_: int, scale: float, *, server: float | None = None) -> ClientFigures:
    """Every timing ``scale`` ms (TPOT and ITL a tenth of it), throughput 100 / ``scale``; the server's own means
    ``server`` ms when given."""
    return ClientFigures(client=client, round=round_, median_ttft_ms=scale, median_tpot_ms=scale / 10,
                         mean_itl_ms=scale / 10, output_throughput=100 / scale, completed=8, failed=0,
                         mean_ttft_ms=scale, server_mean_ttft_ms=server,
                         server_mean_itl_ms=None if server is None else server / 10)


def _result(*, server: bool = False) -> CrosscheckResult:
    # ours 1.0, 1.1, 5.0 ms over the rounds (median 1.1); vLLM's 2.0, 2.2, 2.4 (median 2.2); the server saw 1.0 ms
    ours = [_figures("ours", i, s, server=1.0 if server else None) for i, s in enumerate((1.0, 1.1, 5.0))]
    theirs = [_figures("vllm", i, s, server=1.0 if server else None) for i, s in enumerate((2.0, 2.2, 2.4))]
    return CrosscheckResult(spec=SPEC, rounds=tuple(ours + theirs))


def test_ratios_are_ours_over_vllms_of_the_medians_over_rounds() -> None:
    result = _result()
    assert result.median("ours", "median_ttft_ms") == pytest.approx(1.1)  # the 5 ms round does not move it
    assert result.ratios() == pytest.approx({"median_ttft_ms": 0.5, "median_tpot_ms": 0.5, "mean_itl_ms": 0.5,
                                             "output_throughput": 2.0})
    assert set(result.ratios()) == set(FIGURES)
    assert not result.within(0.4) and result.within(1.0)


def test_anchors_divide_each_client_by_the_servers_view_of_its_own_runs() -> None:
    assert _figures("ours", 0, 2.0, server=1.0).anchored("mean_ttft_ms") == pytest.approx(2.0)
    assert _figures("ours", 0, 2.0).anchored("mean_itl_ms") is None  # the server exposed no histogram
    nan = ClientFigures(client="vllm", round=0, median_ttft_ms=1, median_tpot_ms=1, mean_itl_ms=1,
                        output_throughput=1, completed=1, failed=0, server_mean_ttft_ms=1.0)
    assert math.isnan(nan.mean_ttft_ms) and nan.anchored("mean_ttft_ms") is None  # vLLM's result had no mean
    result = _result(server=True)
    assert result.anchors("ours") == pytest.approx({"mean_itl_ms": 1.1, "mean_ttft_ms": 1.1})
    assert result.anchored_ratios() == pytest.approx({"mean_itl_ms": 0.5, "mean_ttft_ms": 0.5})
    assert _result().anchors("ours") == {} and _result().anchored_ratios() == {}
    # TPOT is anchored where the client gives its per-request mean (ours; a peer whose result has none is left out)
    tpot = ClientFigures(client="ours", round=0, median_ttft_ms=1, median_tpot_ms=1, mean_itl_ms=1,
                         output_throughput=1, completed=1, failed=0, mean_tpot_ms=2.02, server_mean_tpot_ms=2.0)
    assert tpot.anchored("mean_tpot_ms") == pytest.approx(1.01)
    assert replace(tpot, mean_tpot_ms=math.nan).anchored("mean_tpot_ms") is None


def test_the_stored_file_reads_back_with_its_spec_ratios_and_notes(tmp_path: Path) -> None:
    store = Store(tmp_path, "m")
    assert read_crosscheck(store) is None
    path = write_crosscheck(_result(server=True), store)
    assert path == store.crosscheck_path
    stored = read_crosscheck(store)
    assert stored is not None and stored == json.loads(_result(server=True).to_json())
    assert stored["spec"]["tokenizer_dir"] == "/tok" and stored["spec"]["workload"]["input_tokens"] == 8
    assert len(stored["rounds"]) == 6 and stored["ratios"]["output_throughput"] == pytest.approx(2.0)
    assert stored["anchored_ratios"]["mean_itl_ms"] == pytest.approx(0.5)
    assert stored["notes"] == list(DEFINITIONAL_NOTES)
    path.write_text("{trunc")
    assert read_crosscheck(store) is None


def test_the_table_gives_each_round_the_ratios_their_verdict_and_the_notes() -> None:
    text = format_result(_result(), 0.6)
    lines = text.splitlines()
    assert lines[0].startswith("crosscheck: ") and "concurrency 2" in lines[0] and "3 rounds" in lines[0]
    assert sum(line.lstrip().startswith(("0 ", "1 ", "2 ")) for line in lines) == 6
    assert "ratio ours/vLLM (medians over rounds): TTFT 0.500, TPOT 0.500, ITL 0.500, throughput 2.000: NOT all " \
           "within 1.00 ± 0.60" in text
    assert "drift divided out" not in text  # no anchors: nothing claimed
    assert text.endswith(f"  - {DEFINITIONAL_NOTES[-1]}")
    anchored = format_result(_result(server=True), 0.6)
    assert "ratio ours/vLLM of those, the server's drift divided out: ITL 0.500, TTFT 0.500: within 1.00 ± 0.60" \
        in anchored


def test_another_peers_result_is_named_for_it_and_kept_beside_vllms(tmp_path: Path) -> None:
    spec = replace(SPEC, client="aiperf")
    rounds = [_figures("ours", 0, 1.0, server=1.0), _figures("aiperf", 0, 4.0, server=1.0)]
    result = CrosscheckResult(spec=spec, rounds=tuple(rounds), title="AIPerf", notes=("AIPerf sends text.",))
    assert result.ratios()["median_ttft_ms"] == pytest.approx(0.25)
    assert result.anchored_ratios() == pytest.approx({"mean_itl_ms": 0.25, "mean_ttft_ms": 0.25})
    text = format_result(result, 0.05)
    assert "ratio ours/AIPerf (medians over rounds)" in text and text.endswith("  - AIPerf sends text.")
    store = Store(tmp_path, "m")
    path = write_crosscheck(result, store)
    assert path == store.crosscheck_dir / "crosscheck-aiperf.json" and read_crosscheck(store) is None  # vLLM's
    stored = json.loads(path.read_text())
    assert stored["spec"]["client"] == "aiperf" and set(stored["anchors"]) == {"ours", "aiperf"}
    assert stored["notes"] == ["AIPerf sends text."]
