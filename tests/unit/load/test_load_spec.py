"""What a load run is asked and hands back: the measured phase's wall time counts only the requests that were sent."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.config import RandomWorkload
from harness.load.load_spec import LoadSpec, measured_duration
from harness.load.records import ErrorInfo, RequestRecord


def _record(send: float, end: float, error: ErrorInfo | None = None) -> RequestRecord:
    return RequestRecord(index=0, warmup=False, input_tokens=8, max_tokens=4, send_time=send, end_time=end,
                         error=error)


def test_the_duration_runs_from_the_first_send_to_the_last_finish() -> None:
    records = [_record(1.5, 3.5), _record(1.0, 2.0), _record(2.0, 2.5, ErrorInfo("timeout", "slow"))]
    assert measured_duration(records) == pytest.approx(2.5)  # failed requests took their time too


def test_requests_never_sent_take_no_time() -> None:
    gone = ErrorInfo("not_sent", "not sent: the server stopped accepting connections")
    records = [_record(1.0, 2.0, ErrorInfo("connection", "refused")), _record(9.0, 9.0, gone)]
    assert measured_duration(records) == pytest.approx(1.0)
    assert measured_duration([_record(9.0, 9.0, gone)]) == 0.0 and measured_duration([]) == 0.0


def test_a_spec_defaults_to_fixed_concurrency_with_warm_up_and_is_frozen() -> None:
    spec = LoadSpec(base_url="http://h:1", model="m", workload=RandomWorkload(input_tokens=8, output_tokens=4),
                    concurrency=2, tokenizer_dir=Path("/tok"))
    assert spec.pattern.request_rate is None and spec.pattern.duration_s is None
    assert spec.warmup and spec.repeat == 0 and spec.prompt_offset == 0 and spec.abort_after_connection_errors == 8
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.concurrency = 4  # type: ignore[misc]
