"""``python -m sglang_cpu.launch_server``: runs ``sglang.launch_server`` as ``__main__`` with the arguments passed
through, after saying ``has_amx=True``; and SGLang's source still has what that rests on (the override, and no
reader of ``has_amx`` beyond the two the launcher's docstring names)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SGLANG_CPU = REPO / "engines" / "sglang_cpu"
SGLANG_SOURCE = REPO / "build" / "sglang-args" / "sglang"

FAKE_RUNTIME_CONTEXT = """
    FACTS = {}

    class _Override:
        def __init__(self, **facts):
            self.facts = facts

        def install(self):
            FACTS.update(self.facts)

    def override_platform(**facts):
        return _Override(**facts)
"""
FAKE_LAUNCH_SERVER = """
    import json, sys
    from sglang.srt import runtime_context

    print(json.dumps({"name": __name__, "argv": sys.argv[1:], "argv0": sys.argv[0],
                      "facts": runtime_context.FACTS, "main_is_me": sys.modules["__main__"].__file__ == __file__}))
"""


@pytest.fixture
def fake_sglang(tmp_path: Path) -> Path:
    """A ``sglang`` package whose ``launch_server`` prints what it was run with."""
    for folder in ("sglang", "sglang/srt"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "sglang" / "srt" / "runtime_context.py").write_text(textwrap.dedent(FAKE_RUNTIME_CONTEXT))
    (tmp_path / "sglang" / "launch_server.py").write_text(textwrap.dedent(FAKE_LAUNCH_SERVER))
    return tmp_path


def test_it_runs_sglangs_launch_server_as_main_with_the_platform_overridden(fake_sglang: Path) -> None:
    argv = ["--model-path", "/m", "--attention-backend", "intel_amx", "--speculative-algorithm", "NGRAM"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SGLANG_CPU), str(fake_sglang)])}
    result = subprocess.run([sys.executable, "-m", "sglang_cpu.launch_server", *argv], env=env, capture_output=True,
                            text=True, timeout=60, check=True)
    seen = json.loads(result.stdout)
    assert seen == {"name": "__main__", "argv": argv, "argv0": str(fake_sglang / "sglang" / "launch_server.py"),
                    "facts": {"has_amx": True}, "main_is_me": True}


def test_importing_the_launcher_package_imports_neither_sglang_nor_the_stand_in() -> None:
    code = "import sys, sglang_cpu; print(sorted(m for m in ('sglang', 'sgl_kernel') if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(SGLANG_CPU)}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                            check=True)
    assert result.stdout.strip() == "[]"


def test_sglang_still_has_the_override_and_no_other_reader_of_has_amx() -> None:
    if not (SGLANG_SOURCE / "srt").is_dir():
        pytest.skip(f"SGLang's source is not at {SGLANG_SOURCE.relative_to(REPO)} (make setup-test installs it)")
    runtime_context = (SGLANG_SOURCE / "srt" / "runtime_context.py").read_text()
    assert "def override_platform(" in runtime_context and '"has_amx": "cpu_has_amx_support"' in runtime_context
    readers = sorted(str(path.relative_to(SGLANG_SOURCE)) for path in (SGLANG_SOURCE / "srt").rglob("*.py")
                     if re.search(r"\.has_amx\b", path.read_text(errors="replace")))
    assert readers == ["srt/arg_groups/model_overrides/gpt_oss.py", "srt/arg_groups/overrides.py"], (
        "get_platform().has_amx has new readers: check what the launcher's override now changes (engines/sglang_cpu/"
        f"sglang_cpu/launch_server.py): {readers}")
