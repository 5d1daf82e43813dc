"""The store's records as strict models: what one writes reads back equal, and a file of another shape is refused
(the store then reads it as absent) rather than half-trusted."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from harness.result_records import CellResult, RunStamp, SearchProbe, SearchRecord

from tests.support.stored_cells import summary


def _result(**overrides: object) -> CellResult:
    fields: dict[str, object] = dict(cell_id="c", label="m/w/c1", server_id="s", status="ok", started_at="t0",
                                     finished_at="t1")
    return CellResult.model_validate(fields | overrides)


def test_a_cell_result_round_trips_with_its_summary_and_machine_speeds() -> None:
    result = _result(summary=summary(100.0, 20.0), machine_s=(1.5, None), server_ready_s=3.0)
    back = CellResult.model_validate_json(result.model_dump_json(indent=2))
    assert back == result and back.summary is not None and back.machine_s == (1.5, None)


def test_a_cell_result_is_ok_or_failed_and_has_no_other_keys() -> None:
    assert _result(status="failed", reason="boom").reason == "boom"
    with pytest.raises(ValidationError, match="status"):
        _result(status="done")
    with pytest.raises(ValidationError, match="extra"):
        _result(note="from a newer version")


def test_a_search_record_keeps_its_probes_in_order() -> None:
    probes = (SearchProbe(value=1, cell_id="a", meets=True, output_throughput=10.0),
              SearchProbe(value=2, cell_id="b", meets=False, misses=("ttft_p99_ms",), reused=True))
    record = SearchRecord(search_id="x", label="search", axis="concurrency", probes=probes, answer=1,
                          stopped="bracketed")
    back = SearchRecord.model_validate_json(record.model_dump_json())
    assert back == record and [p.cell_id for p in back.probes] == ["a", "b"]
    with pytest.raises(ValidationError, match="axis"):
        SearchRecord(search_id="x", label="search", axis="workload")


def test_a_run_stamp_never_changes_once_made() -> None:
    stamp = RunStamp(run_id="r", started_at="t")
    with pytest.raises(ValidationError, match="frozen"):
        stamp.run_id = "other"  # type: ignore[misc]
