"""The ``sgl_kernel`` names an SGLang tree uses: the scanner on planted sources, then the installed SGLang source
against the committed list, which fails naming the names that appeared or disappeared."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from sgl_kernel import known_imports
from sgl_kernel.imports_check import import_drift, sgl_kernel_names

REPO = Path(__file__).resolve().parents[3]
SGLANG_SOURCE = REPO / "build" / "sglang-args" / "sglang"
"""SGLang's Python source as ``make setup-test`` installs it for the argument checks (tests/README.md)."""
LIST_LOCATION = "engines/sglang_cpu/sgl_kernel/known_imports.py"


def scan(tmp_path: Path, source: str) -> frozenset[str]:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "module.py").write_text(textwrap.dedent(source))
    return sgl_kernel_names(tmp_path)


def test_every_form_is_found_and_written_as_one_dotted_name(tmp_path: Path) -> None:
    found = scan(tmp_path, """
        import torch
        import sgl_kernel
        import sgl_kernel.allreduce as custom_ar
        from sgl_kernel import silu_and_mul, gelu_and_mul as gelu
        from sgl_kernel.speculative import reconstruct_indices_from_tree_mask
        if _is_cpu:
            out = torch.ops.sgl_kernel.rmsnorm_cpu(x, w, eps)
            major = torch.ops.sgl_kernel.query_device.default(device)
            ok = hasattr(torch.ops.sgl_kernel, "fused_qk_norm_cpu")
        y = sgl_kernel.fp8_scaled_mm(a, b)
    """)
    assert found == {
        "sgl_kernel.allreduce", "sgl_kernel.silu_and_mul", "sgl_kernel.gelu_and_mul",
        "sgl_kernel.speculative.reconstruct_indices_from_tree_mask", "torch.ops.sgl_kernel.rmsnorm_cpu",
        "torch.ops.sgl_kernel.query_device", "torch.ops.sgl_kernel.fused_qk_norm_cpu", "sgl_kernel.fp8_scaled_mm",
    }


def test_other_packages_strings_and_comments_are_not_names(tmp_path: Path) -> None:
    found = scan(tmp_path, """
        from sgl_kernel_npu.norm import split_qkv_rmsnorm_rope  # sgl_kernel.not_this
        import sgl_kernel_npu
        message = "torch.ops.sgl_kernel.not_this_either"
        from .sgl_kernel import relative_is_not_it
    """)
    assert found == frozenset()


def test_the_drift_report_names_what_appeared_and_disappeared() -> None:
    drift = import_drift({"sgl_kernel.a", "sgl_kernel.new_op"}, {"sgl_kernel.a", "sgl_kernel.old_op"})
    assert not drift.clean
    message = drift.describe("0.5.23", LIST_LOCATION)
    assert "appeared (1): sgl_kernel.new_op" in message
    assert "disappeared (1): sgl_kernel.old_op" in message
    assert f"update {LIST_LOCATION} after checking each against SGLang 0.5.23" in message
    assert import_drift({"x"}, {"x"}).clean


def test_the_committed_list_is_what_sglang_imports() -> None:
    if not (SGLANG_SOURCE / "srt").is_dir():
        pytest.skip(f"SGLang's source is not at {SGLANG_SOURCE.relative_to(REPO)} (make setup-test installs it)")
    installed = sorted(p.name for p in SGLANG_SOURCE.parent.glob("sglang-*.dist-info"))
    assert installed == [f"sglang-{known_imports.SGLANG_VERSION}.dist-info"], (
        f"the list was checked against SGLang {known_imports.SGLANG_VERSION}; {SGLANG_SOURCE.parent} holds {installed}")
    drift = import_drift(sgl_kernel_names(SGLANG_SOURCE), known_imports.KNOWN_IMPORTS)
    assert drift.clean, drift.describe(known_imports.SGLANG_VERSION, LIST_LOCATION)


def test_the_lists_are_consistent() -> None:
    assert known_imports.PLACEHOLDERS.isdisjoint(known_imports.SUBMODULES)
    assert known_imports.PLACEHOLDERS <= known_imports.TOP_LEVEL
    submodules_in_use = {name.partition(".")[0] for name in known_imports.IN_SUBMODULES}
    assert submodules_in_use <= known_imports.SUBMODULES
