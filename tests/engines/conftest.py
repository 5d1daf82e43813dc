"""The engines' own code beside the harness (``engines/``) is not a package of the harness's venv: its tests import it
from its folder, as the engines' venvs do through a ``.pth`` file.

``engines/sglang_cpu`` holds the ``sgl_kernel`` stand-in and ``engines/sglang_expert_load`` the general plugin of
SGLang that clocks its recorder. Putting them on ``sys.path`` here makes ``import sgl_kernel`` and ``import
harness_sglang_expert_load`` succeed for the rest of this pytest session; nothing else in the harness or its tests
imports them.
"""

from __future__ import annotations

import sys
from pathlib import Path

ENGINES = Path(__file__).resolve().parents[2] / "engines"

for folder in (ENGINES / "sglang_cpu", ENGINES / "sglang_expert_load"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
