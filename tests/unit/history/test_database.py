"""Opening the history: migrated on first use, the migrations agreeing with the table definitions, and every bad
database a clear error naming the URL and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from harness.errors import HistoryError
from harness.history import open_history, shown
from harness.history.database import head_revision
from harness.history.schema import metadata


def test_a_new_database_is_migrated_to_the_newest_schema(history_url: str) -> None:
    engine = open_history(history_url)
    try:
        assert set(inspect(engine).get_table_names()) >= {"runs", "cells", "launches", "figures", "probes"}
        with engine.connect() as connection:
            assert MigrationContext.configure(connection).get_current_revision() == head_revision()
            # the migrations create exactly what harness/history/schema.py declares
            assert compare_metadata(MigrationContext.configure(connection), metadata) == []
    finally:
        engine.dispose()
    open_history(history_url).dispose()  # a second open finds it current


def test_a_corrupt_sqlite_file_names_the_fix(tmp_path: Path) -> None:
    broken = tmp_path / "history.sqlite"
    broken.write_bytes(b"this is not a database, it is a text file that lost its way" * 100)
    with pytest.raises(HistoryError) as caught:
        open_history(f"sqlite:///{broken}")
    message = str(caught.value)
    assert str(broken) in message and "mv" in message and "fix:" in message


def test_an_unreachable_server_names_the_url_and_the_fix() -> None:
    url = "postgresql+psycopg://harness:secret@127.0.0.1:9/history"  # port 9 (discard): nothing listens
    with pytest.raises(HistoryError) as caught:
        open_history(url)
    message = str(caught.value)
    assert "cannot reach" in message and "--history none" in message and "secret" not in message
    assert shown(url) in message


@pytest.mark.parametrize("url, expected", [("not a url", "is not a database URL"),
                                           ("mysql+nosuchdriver://u@h/db", "no driver")])
def test_a_malformed_url_is_refused(url: str, expected: str) -> None:
    with pytest.raises(HistoryError, match=expected):
        open_history(url)


def test_a_schema_newer_than_the_harness_is_refused(history_url: str) -> None:
    engine = open_history(history_url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(HistoryError, match="does not know"):
        open_history(history_url)
