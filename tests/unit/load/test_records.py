from __future__ import annotations

from pathlib import Path

import pytest

from harness.load.records import ErrorInfo, RequestRecord, read_jsonl, write_jsonl


def _record(**overrides: object) -> RequestRecord:
    fields: dict[str, object] = dict(
        index=3, warmup=False, input_tokens=10, max_tokens=6, send_time=1.0, end_time=1.5,
        chunk_times=(0.1, 0.2, 0.35), chunk_tokens=(1, 3, 2), output_tokens=6, prompt_tokens=12,
    )
    fields.update(overrides)
    return RequestRecord(**fields)  # type: ignore[arg-type]


def test_latencies_follow_vllm_definitions() -> None:
    record = _record()
    assert record.ok
    assert record.ttft == pytest.approx(0.1)
    assert record.e2el == pytest.approx(0.35)  # last token chunk, not end_time
    # TPOT divides by tokens, not chunks: (0.35 - 0.1) / (6 - 1)
    assert record.tpot == pytest.approx(0.05)
    # ITL: one gap per chunk, whatever the chunk carries
    assert record.itl == pytest.approx((0.1, 0.15))
    assert sum(record.itl) == pytest.approx(record.e2el - record.ttft)  # type: ignore[operator]


def test_single_token_and_empty_records_have_no_tpot() -> None:
    one = _record(chunk_times=(0.1,), chunk_tokens=(1,), output_tokens=1)
    assert one.tpot is None and one.itl == () and one.e2el == pytest.approx(0.1)
    empty = _record(chunk_times=(), chunk_tokens=(), output_tokens=0, error=ErrorInfo("empty", "no tokens"))
    assert not empty.ok and empty.ttft is None and empty.e2el is None and empty.tpot is None


def test_jsonl_round_trip(tmp_path: Path) -> None:
    records = [
        _record(),
        _record(index=4, warmup=True, prompt_tokens=None),
        _record(index=5, chunk_times=(), chunk_tokens=(), output_tokens=0,
                error=ErrorInfo("http_status", "boom", 500)),
    ]
    path = tmp_path / "records.jsonl"
    write_jsonl(path, records)
    assert len(path.read_text().splitlines()) == 3
    assert read_jsonl(path) == records
    assert not list(tmp_path.glob("*.tmp"))


def test_a_write_that_fails_leaves_the_old_file_and_no_partial_one(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    write_jsonl(path, [_record()])

    def records() -> object:  # the disk fills on the second record
        yield _record(index=8)
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space") as failed:
        write_jsonl(path, records())  # type: ignore[arg-type]
    assert failed.value.filename == str(path)  # for the message that stops the run
    assert read_jsonl(path) == [_record()] and [p.name for p in tmp_path.iterdir()] == ["records.jsonl"]
