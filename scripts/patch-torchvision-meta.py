"""Let PyPI's torchvision import beside the CPU torch it was not built for (SGLang imports it at module level).

torchvision's ``_meta_registrations.py`` registers fake kernels for ``torchvision::nms`` and ``torchvision::qnms``
unconditionally; beside a torch its compiled ops cannot load into, that fails the whole import with "operator
torchvision::nms does not exist". This makes those two registrations conditional on the ops being present, and
nothing else. Idempotent: a file already patched is left as it is. Usage: python patch-torchvision-meta.py SITE
"""

import sys
from pathlib import Path

GUARD = 'hasattr(torch.ops.torchvision, "{op}")'


def patch(site: Path) -> str:
    path = site / "torchvision" / "_meta_registrations.py"
    text = path.read_text()
    for op in ("nms", "qnms"):
        plain = f'@torch.library.register_fake("torchvision::{op}")\n'
        guarded = f'@(torch.library.register_fake("torchvision::{op}") if {GUARD.format(op=op)} else (lambda f: f))\n'
        if guarded in text:
            continue
        if plain not in text:
            sys.exit(f"error: {path} has no line {plain.strip()!r}: this torchvision differs from 0.28.0; "
                     "fix: pin torchvision==0.28.0 in scripts/install-sglang.sh or update this patch")
        text = text.replace(plain, guarded)
    path.write_text(text)
    return str(path)


if __name__ == "__main__":
    print("patched", patch(Path(sys.argv[1])))
