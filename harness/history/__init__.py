"""The results history: every run's cells, per server launch, in a SQL database (SQLite under ``reports/`` by
default, PostgreSQL for a team's shared history), and the change points Apache Otava finds in each figure's series
over runs, which the regression gate (``harness.verdict``) and ``harness history`` read.
"""

from harness.history.changes import Change, change_points
from harness.history.database import DISABLED, open_history, shown
from harness.history.recording import Recorded, RunIdentity
from harness.history.run_history import HistoryJudgement, HistoryQuestion, check_history, judge_history, opened, record
from harness.history.series import Holding, Point, RunInfo, Series, holdings, read_series, runs_of
from harness.history.trend import Trend, TrendVerdict, judge_trend, judge_trends

__all__ = [
    "Change", "change_points", "check_history", "DISABLED", "HistoryJudgement", "HistoryQuestion", "Holding",
    "holdings", "judge_history", "judge_trend", "judge_trends", "open_history", "opened", "Point", "read_series",
    "record", "Recorded", "RunIdentity", "RunInfo", "runs_of", "Series", "shown", "Trend", "TrendVerdict",
]
