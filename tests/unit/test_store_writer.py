"""One run at a time writes a results directory: the second is refused naming the holder; the lock dies with it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.errors import StoreBusy
from harness.store_writer import LOCK_NAME, hold_store

HOLD = "import sys, time; from pathlib import Path; from harness.store_writer import hold_store\n" \
       "with hold_store(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(30)\n"


def test_a_second_writer_is_refused_naming_the_holder_s_pid(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "t")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreBusy, match=f"another `harness run` is writing these results \\(pid {holder.pid} "):
            with hold_store(tmp_path / "t"):
                pass
    finally:
        holder.kill()
        holder.wait()
    # the holder died without a word: its lock went with it, the file naming it is simply taken over
    with hold_store(tmp_path / "t") as lock_file:
        assert lock_file.read_text() == f"{os.getpid()}\n"


def test_the_lock_is_released_on_exit_and_the_same_process_may_hold_it_again(tmp_path: Path) -> None:
    with hold_store(tmp_path / "t"):
        assert (tmp_path / "t" / LOCK_NAME).is_file()
    start = time.monotonic()
    with hold_store(tmp_path / "t"):
        pass
    assert time.monotonic() - start < 1
