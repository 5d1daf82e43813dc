"""The gate section's trend figure: drawn for the figures whose history stepped, nothing otherwise."""

from __future__ import annotations

from pathlib import Path

from harness.config.gates import HistorySpec
from harness.history import Point, RunInfo, Series, Trend, judge_trend
from harness.report.history_plot import trend_plot
from harness.store import Store
from harness.verdict import HistoryState


def stepped(metric: str, probes: bool) -> Trend:
    values = [1000.0, 1040.0, 980.0, 1010.0, 995.0, 1025.0, 1005.0, 990.0, 700.0, 705.0]
    points = tuple(Point(RunInfo(f"r{i}", f"2026-11-{i + 1:02d}", None, {}, 0.5 if probes else None), (v * 0.97, v))
                   for i, v in enumerate(values))
    return judge_trend(Series("c", "tiny/c4", metric, points), "higher", 0.10, HistorySpec(), "r9")


def test_the_stepped_figures_are_drawn(tmp_path: Path) -> None:
    store = Store(tmp_path / "reports", "default")
    trends = (stepped("output_throughput", probes=True), stepped("request_throughput", probes=False))
    assert all(t.changed for t in trends)
    state = HistoryState(url="sqlite:///x", runs=10, changed=trends)
    link = trend_plot(state, store)
    assert link == "plots/history-default.png"
    png = store.plots_dir / "history-default.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_nothing_changed_draws_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "reports", "default")
    assert trend_plot(None, store) is None and trend_plot(HistoryState(url="sqlite:///x", runs=4), store) is None
    assert not store.plots_dir.exists()
