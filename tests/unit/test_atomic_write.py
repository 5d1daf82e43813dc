"""The one atomic write: a reader finds the old content or the new, the temporary is unique, synced and never left
behind, and a write that fails names the file it was writing."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO

import pytest

from harness.atomic_write import write_atomically


def test_the_content_replaces_the_file_and_missing_parents_are_made(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "x.json"
    write_atomically(target, lambda out: out.write(b"old"))
    write_atomically(target, lambda out: out.write(b"new"))
    assert target.read_bytes() == b"new"
    assert [p.name for p in target.parent.iterdir()] == ["x.json"]


def test_the_content_goes_to_a_hidden_temporary_beside_the_target_until_it_is_synced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "x.json"
    target.write_bytes(b"old")
    seen: list[list[str]] = []
    read: list[bytes] = []
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    def write(out: BinaryIO) -> None:
        out.write(b"new%d" % len(seen))
        seen.append(sorted(p.name for p in tmp_path.iterdir()))
        read.append(target.read_bytes())

    monkeypatch.setattr(os, "fsync", fsync)
    write_atomically(target, write)
    write_atomically(target, write)
    assert read == [b"old", b"new0"]  # while a write runs, a reader finds the previous content whole
    (first,), (second,) = ([n for n in names if n != "x.json"] for names in seen)
    assert first.startswith(".x.json.") and second.startswith(".x.json.") and first != second
    assert len(synced) == 2
    assert target.read_bytes() == b"new1"


def test_a_failed_write_keeps_the_old_file_and_names_the_target(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    write_atomically(target, lambda out: out.write(b"old"))

    def full(out: BinaryIO) -> None:
        out.write(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match="No space") as failed:
        write_atomically(target, full)
    assert failed.value.filename == str(target)  # the message that stops the run says where
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_an_error_that_names_its_own_file_keeps_that_name(tmp_path: Path) -> None:
    def elsewhere(out: BinaryIO) -> None:
        raise FileNotFoundError(errno.ENOENT, "gone", "/some/source")

    with pytest.raises(FileNotFoundError) as failed:
        write_atomically(tmp_path / "x.json", elsewhere)
    assert failed.value.filename == "/some/source"


def test_an_interrupted_write_leaves_nothing_behind(tmp_path: Path) -> None:
    def interrupted(out: BinaryIO) -> None:
        out.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(tmp_path / "x.json", interrupted)
    assert list(tmp_path.iterdir()) == []
