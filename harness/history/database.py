"""Where the results history lives and how it is opened: a SQLAlchemy engine on the URL the user gave (a team's
PostgreSQL, ``postgresql+psycopg://...``) or the embedded SQLite file beside the reports, migrated to the newest
schema with Alembic before anything reads or writes it.

Every way opening can fail (a server that does not answer, a URL no driver knows, a file that is not a SQLite
database, a schema newer than this harness) is a ``HistoryError`` that names the URL (password hidden) and the fix.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError

from harness.errors import HistoryError

MIGRATIONS = Path(__file__).with_name("migrations")
DISABLED = "none"
"""The URL that turns the history off (``--history none``)."""


def shown(url: str) -> str:
    """The URL as messages print it: the password hidden."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head_revision() -> str | None:
    return ScriptDirectory.from_config(_config()).get_current_head()


def _enforce_foreign_keys(engine: Engine) -> None:
    """SQLite ignores ON DELETE CASCADE unless each connection asks for it."""
    @event.listens_for(engine, "connect")
    def _on(dbapi_connection, _record):  # type: ignore[no-untyped-def]
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()


def _engine(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise HistoryError(f"history database URL {url!r} is not a database URL\n  fix: give one such as "
                           "sqlite:///reports/history.sqlite or postgresql+psycopg://user@host/db, or --history "
                           f"{DISABLED} to run without a history") from None
    try:
        engine = create_engine(parsed, connect_args={"connect_timeout": 10} if parsed.get_backend_name() ==
                               "postgresql" else {})
    except (NoSuchModuleError, ImportError) as exc:
        raise HistoryError(f"no driver for the history database {shown(url)} ({exc})\n  fix: use sqlite:/// or "
                           "postgresql+psycopg:// (psycopg 3 is installed with the harness)") from None
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        _enforce_foreign_keys(engine)
    return engine


def open_history(url: str) -> Engine:
    """An engine on the history at ``url``, its schema migrated to this harness's newest; HistoryError otherwise."""
    engine = _engine(url)
    head = head_revision()
    try:
        with engine.begin() as connection:
            current = MigrationContext.configure(connection).get_current_revision()
            if current is not None and current != head and current not in _known_revisions():
                raise HistoryError(f"the history database {shown(url)} has schema revision {current}, which this "
                                   f"harness does not know (it knows up to {head})\n  fix: upgrade the harness, or "
                                   "point --history at another database")
            if current != head:
                config = _config()
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
    except OperationalError as exc:
        engine.dispose()
        raise HistoryError(_unreachable(url, exc)) from None
    except DBAPIError as exc:
        engine.dispose()
        raise HistoryError(f"the history database {shown(url)} cannot be read: {_first_line(exc)}\n  fix: "
                           + _fix_for(url)) from None
    return engine


def _known_revisions() -> set[str]:
    return {script.revision for script in ScriptDirectory.from_config(_config()).walk_revisions()}


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def _fix_for(url: str) -> str:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        return (f"the file is not a SQLite database (corrupt, or something else): move it aside (mv "
                f"{parsed.database} {parsed.database}.broken) and the next run starts a new history there")
    return f"check the URL and the server, or run with --history {DISABLED}"


def _unreachable(url: str, exc: OperationalError) -> str:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return f"the history database {shown(url)} cannot be opened: {_first_line(exc)}\n  fix: {_fix_for(url)}"
    return (f"cannot reach the history database {shown(url)}: {_first_line(exc)}\n  fix: start the database "
            f"server or correct the URL (--history or HARNESS_HISTORY), or pass --history {DISABLED} to run "
            "without a history (results are written to reports/ either way)")
