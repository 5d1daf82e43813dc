"""Compile a venv's modules to bytecode, except the trees that nothing here imports: `VENV_PYTHON compile-bytecode.py`.

Run by scripts/uv-install.sh after each install, with the venv's own interpreter (bytecode is per Python version).
Where PYTHONDONTWRITEBYTECODE is set (it is on these machines) an uncompiled module is compiled again by every
process that imports it, and each of a vLLM server's three processes imports about 100 MB of source: so the
modules are compiled once, here. But not all of them: after a fresh clone's `.ci/run` (2026-11-27, read from the
bytecode files' access times), the harness, its tests and both engines had read about a third of the ~500 MB of
bytecode in each venv. The trees skipped below held about 40% of it and almost none of what was read: test suites,
transformers' ~400 model packages (the few that are served get compiled by the first process that imports them,
which the Makefile lets write its bytecode), and packages that come with a dependency but are never imported here.

Python's compileall would do the same walk, but its parallel mode hands each of the ~29,000 files to a worker
separately, and that bookkeeping alone took 28 CPU s on a venv with nothing left to compile (2.3 s serially): so the
stale files are found serially and compiled in chunks.
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
import re
import sys
import sysconfig
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SKIP = re.compile(r"/(tests?|testing)/|/transformers/models/|/site-packages/(plotly|anthropic|mypy|pyarrow)/")
CHUNK = 64


def stale(source: str) -> bool:
    """True when the module has no bytecode, or bytecode of another source (timestamp check, as the import system
    makes it)."""
    try:
        stat = os.stat(source)
        with open(importlib.util.cache_from_source(source), "rb") as cached:
            header = cached.read(16)
    except OSError:
        return True
    fields = (0, int(stat.st_mtime), stat.st_size)  # flags 0 (timestamp-based), the source's mtime and size
    expected = importlib.util.MAGIC_NUMBER + b"".join((field & 0xFFFFFFFF).to_bytes(4, "little") for field in fields)
    return header != expected


def compile_all(sources: list[str]) -> int:
    """Compile ``sources``; a file that does not compile (Python 2 leftovers in some packages) is skipped, as
    compileall skips it."""
    done = 0
    for source in sources:
        try:
            py_compile.compile(source, doraise=True, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
            done += 1
        except (py_compile.PyCompileError, OSError, ValueError):
            pass
    return done


def main() -> int:
    site = Path(sysconfig.get_paths()["purelib"])
    todo = [str(path) for path in site.rglob("*.py") if not SKIP.search(str(path)) and stale(str(path))]
    chunks = [todo[i:i + CHUNK] for i in range(0, len(todo), CHUNK)]
    if chunks:
        with ProcessPoolExecutor(max_workers=min(len(chunks), os.cpu_count() or 1)) as pool:
            compiled = sum(pool.map(compile_all, chunks))
        print(f"compile-bytecode: {compiled} of {len(todo)} stale modules compiled under {site}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
