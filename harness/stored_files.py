"""Reading back what the store wrote, when it may have been damaged since: recovered, or refused by name.

The store writes every file whole (``harness.atomic_write``), but a file can still be damaged after the fact: cut
short by a bad copy, bytes flipped on a failing disk, replaced by valid JSON of another shape, emptied, made a
directory or unreadable by hand. What the harness reads back is never half-trusted:

- a file whose content can be redone (a cell's ``summary.json``, its ``records.jsonl``, the run's stamp, a search)
  is *set aside* as ``<name>.damaged`` (never deleted: it may be evidence) and read as absent, so the cell counts
  as not measured and the next ``harness run`` redoes it; a warning names both paths;
- a file that cannot be redone here (a committed baseline or lock: ``load_or_refuse``), or a file the harness may
  not read (no permission), raises a ``StoredFileError`` naming the file and the fix, which the command line turns
  into exit 2.

Every reader of a stored file goes through ``load_or_set_aside`` or ``load_or_refuse`` (cells' results and records,
the run's stamp, lock, calibration and predictions, parity runs and verdicts, telemetry, expert-load dumps, profiles'
summaries, the gate's verdict); the history database has its own (``harness.history.database``).

``Store.read_result`` applies the first rule to a cell as a whole: its result counts only while its records read
back whole (every line a record, the last one ended). A file cut exactly at a line's end, or a flipped byte that
leaves valid JSON with another value, is not told apart: no checksum is stored.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from harness.atomic_write import DAMAGED_SUFFIX, move_aside
from harness.errors import DamagedFile, StoredFileError
from harness.load.records import read_jsonl

log = logging.getLogger(__name__)
T = TypeVar("T")

def unreadable(path: Path, exc: OSError) -> StoredFileError:
    """The error for a stored file this user may not read (or the disk will not give back)."""
    return StoredFileError(f"{path}: cannot be read ({exc.strerror or exc})\n  fix: give yourself access (chmod u+rw "
                           f"{path}), or move it aside (mv {path} {path}{DAMAGED_SUFFIX}) so that a rerun redoes what "
                           "it held; then run the command again")


def read_stored_text(path: Path) -> str | None:
    """The text of a stored file; None when there is none. A directory in its place or bytes that are not UTF-8
    raise ``DamagedFile``, no permission ``StoredFileError``: each names the file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise DamagedFile(f"{path}: a directory where the harness wrote a file") from exc
    except OSError as exc:
        raise unreadable(path, exc) from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DamagedFile(f"{path}: not UTF-8 text at byte {exc.start} (bytes flipped or cut)") from exc


def set_aside(path: Path, why: str) -> Path:
    """Move ``path`` (file or directory) to ``<name>.damaged`` (``.damaged.1``, ... when taken); the warning says
    where and ``why`` (``damaged (cut short)``). A move the disk refuses is a ``StoredFileError`` naming the file."""
    try:
        target = move_aside(path)
    except OSError as exc:
        raise StoredFileError(f"{path}: {why}, and it could not be moved aside ({exc.strerror})\n  fix: "
                              f"move it away yourself (mv {path} {path}{DAMAGED_SUFFIX}), then run the command "
                              "again") from exc
    log.warning("%s: %s: set aside as %s; what it held counts as not measured and the next `harness run` redoes it",
                path, why, target.name)
    return target


def load_or_set_aside(path: Path, parse: Callable[[str], T]) -> T | None:
    """``parse`` of the stored text at ``path``; None when there is none or it was damaged (then set aside).

    ``parse`` raises ``ValueError`` (pydantic's ``ValidationError`` is one) for content of the wrong shape."""
    try:
        text = read_stored_text(path)
        return None if text is None else parse(text)
    except DamagedFile as exc:
        set_aside(path, f"damaged ({str(exc).removeprefix(f'{path}: ')})")
    except (ValueError, TypeError, KeyError) as exc:
        set_aside(path, f"damaged ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'invalid'})")
    return None


def load_or_refuse(path: Path, parse: Callable[[str], T], what: str, fix: str) -> T | None:
    """``parse`` of the stored text at ``path``; None when there is none. For a file the harness cannot redo here (a
    committed lock): damage raises ``DamagedFile`` naming the file, ``what`` it should be and ``fix``; nothing is
    moved."""
    try:
        text = read_stored_text(path)
        return None if text is None else parse(text)
    except DamagedFile as exc:
        raise DamagedFile(f"{exc}\n  fix: {fix}") from exc
    except (ValueError, TypeError, KeyError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else "invalid"
        raise DamagedFile(f"{path}: damaged, or not a {what} of this harness ({type(exc).__name__}: {first})\n"
                          f"  fix: {fix}") from exc


def records_damage(path: Path, *, empty_ok: bool = True) -> str | None:
    """Why the records at ``path`` cannot be trusted (None: they read back whole, or there are none). Every line
    the harness writes ends in a newline, so a last line without one was cut short even where it parses; a file
    cut exactly at a line's end reads as fewer requests and is not told apart here, but an emptied one is where a
    finished cell's records must hold its requests (``empty_ok`` False)."""
    if path.exists() and not path.is_file():
        return "a directory where the harness wrote a file"
    if not empty_ok and path.is_file() and path.stat().st_size == 0:
        return "empty: the requests of a finished cell are gone"
    try:
        read_jsonl(path)
    except DamagedFile as exc:
        why = str(exc).split("\n")[0].removeprefix(f"{path}: ")
        return why[len("damaged ("):-1] if why.startswith("damaged (") else why
    except FileNotFoundError:
        return None
    with path.open("rb") as stored:
        if stored.seek(0, os.SEEK_END) and (stored.seek(-1, os.SEEK_END), stored.read(1))[1] != b"\n":
            return "cut short: its last line has no end"
    return None


__all__ = ["DAMAGED_SUFFIX", "load_or_refuse", "load_or_set_aside", "read_stored_text", "records_damage", "set_aside",
           "unreadable"]
