"""The history stage's check in the validation pass: the database opens before anything launches, or the error
names the fix; ``none`` needs no database."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HistoryError
from harness.history import DISABLED, check_history, opened


def test_a_new_history_opens_and_none_needs_none(tmp_path: Path) -> None:
    database = tmp_path / "history.sqlite"
    check_history(f"sqlite:///{database}")
    assert database.is_file()  # created and migrated, then closed
    with opened(f"sqlite:///{database}") as engine:
        assert engine.url.database == str(database)
    check_history(DISABLED)  # a run without a history opens nothing


def test_a_history_that_cannot_open_stops_the_check_with_the_fix(tmp_path: Path) -> None:
    broken = tmp_path / "history.sqlite"
    broken.write_bytes(b"not a database" * 200)
    with pytest.raises(HistoryError, match="fix:"):
        check_history(f"sqlite:///{broken}")
