"""Writing a file so that a reader finds the old content or the new, never part of either: the one place that does it.

Every result file the harness writes is judged later by its presence (a cell whose ``summary.json`` says ``ok`` is
finished), so a crash, Ctrl-C or a full disk must never leave half a file behind that looks whole. The content goes
to a temporary file of a unique name in the target's own directory (the rename stays on one filesystem, and two
writers never share a temporary), is synced to the disk, and only then renamed over the target; on any failure the
temporary is removed. ``harness.store.write_atomic`` (whole texts) and ``harness.load.records.write_jsonl`` (records
streamed line by line) both write through ``write_atomically``. It sits in the lowest layer so that both may.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

DAMAGED_SUFFIX = ".damaged"


def move_aside(path: Path) -> Path:
    """Rename ``path`` (a file or a directory) to ``<name>.damaged``, or ``.damaged.1``, ... when that is taken:
    what a damaged result becomes, kept for a person to look at, never deleted (``harness.stored_files``)."""
    target = path.with_name(path.name + DAMAGED_SUFFIX)
    n = 0
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}{DAMAGED_SUFFIX}.{n}")
    os.rename(path, target)
    return target


def write_atomically(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Replace ``path`` with what ``write`` puts into the open binary file it is handed (its parents are made).

    A directory standing where the file goes (made by hand) is moved aside first (``move_aside``): no rename can
    replace it. An ``OSError`` that names no file (a full disk fails the write, not an open) is given ``path``'s
    name, so the message that stops a run says where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        moved = move_aside(path)
        logging.getLogger(__name__).warning("%s: a directory where the harness writes a file: moved aside as %s",
                                            path, moved.name)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException as exc:  # Ctrl-C too: no temporary is left to take space or be mistaken for a result
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(path)
        raise
