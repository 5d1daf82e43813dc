"""The engines' own code beside the harness (``engines/``) is not a package of the harness's venv: its tests import it
from its folder, as the engines' venvs do through a ``.pth`` file.

``engines/sglang_cpu`` holds the ``sgl_kernel`` stand-in. Putting it on ``sys.path`` here makes ``import sgl_kernel``
succeed for the rest of this pytest session; nothing else in the harness or its tests imports ``sgl_kernel``.
"""

from __future__ import annotations

import sys
from pathlib import Path

SGLANG_CPU = Path(__file__).resolve().parents[2] / "engines" / "sglang_cpu"

if str(SGLANG_CPU) not in sys.path:
    sys.path.insert(0, str(SGLANG_CPU))
