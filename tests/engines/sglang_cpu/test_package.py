"""The stand-in's surface: placeholders raise and name themselves, the real ops are real, ``convert_weight_packed`` is
absent (so SGLang keeps its torch layers), the ``speculative`` submodule is not shadowed, and names outside the
committed list are refused."""

from __future__ import annotations

import importlib

import pytest
import torch

import sgl_kernel
from sgl_kernel import known_imports, placeholders


def test_it_is_pinned_to_the_sglang_release_its_names_were_read_in() -> None:
    assert sgl_kernel.SGLANG_VERSION == known_imports.SGLANG_VERSION == "0.5.23"


@pytest.mark.parametrize("name", ["silu_and_mul", "fused_experts", "build_draft_decode_metadata_cpu", "rmsnorm"])
def test_a_placeholder_imports_and_raises_naming_itself(name: str) -> None:
    imported = getattr(importlib.import_module("sgl_kernel"), name)
    with pytest.raises(NotImplementedError, match=rf"sgl_kernel\.{name} is not implemented by the harness's CPU"):
        imported(torch.zeros(1))
    assert f"sgl_kernel.{name}" in repr(imported)


def test_every_placeholder_name_resolves_to_a_placeholder() -> None:
    assert known_imports.PLACEHOLDERS
    for name in known_imports.PLACEHOLDERS:
        assert isinstance(getattr(sgl_kernel, name), placeholders.Placeholder), name


def test_from_import_of_placeholders_succeeds() -> None:
    namespace: dict[str, object] = {}
    exec("from sgl_kernel import gelu_and_mul, moe_sum, silu_and_mul", namespace)
    assert all(isinstance(namespace[n], placeholders.Placeholder) for n in ("gelu_and_mul", "moe_sum", "silu_and_mul"))


def test_convert_weight_packed_is_absent_so_sglang_keeps_its_torch_layers() -> None:
    # SGLang's cpu_has_amx_support(): `import sgl_kernel; hasattr(torch.ops.sgl_kernel, "convert_weight_packed")`
    assert not hasattr(torch.ops.sgl_kernel, "convert_weight_packed")
    assert not hasattr(sgl_kernel, "convert_weight_packed")


def test_only_the_two_attention_ops_are_registered_with_torch() -> None:
    torch_ops = {name.removeprefix("torch.ops.sgl_kernel.") for name in known_imports.REAL_OPS
                 if name.startswith("torch.ops.")}
    assert torch_ops == {"decode_attention_cpu", "extend_attention_cpu"}
    registered = {name for name in known_imports.TORCH_OPS if hasattr(torch.ops.sgl_kernel, name)}
    assert registered == torch_ops


def test_the_speculative_submodule_is_the_real_one() -> None:
    from sgl_kernel import speculative

    assert speculative is importlib.import_module("sgl_kernel.speculative")
    assert callable(speculative.reconstruct_indices_from_tree_mask)
    assert not isinstance(speculative, placeholders.Placeholder)


def test_every_real_op_is_real_and_in_the_committed_list() -> None:
    assert known_imports.REAL_OPS <= known_imports.KNOWN_IMPORTS
    for name in known_imports.REAL_OPS:
        if name.startswith("torch.ops.sgl_kernel."):
            op = getattr(torch.ops.sgl_kernel, name.rpartition(".")[2])
        else:
            module, _, attr = name.rpartition(".")
            op = getattr(importlib.import_module(module), attr)
        assert callable(op) and not isinstance(op, placeholders.Placeholder), name


@pytest.mark.parametrize("name", ["kvcacheio", "flash_attn", "metal", "spatial", "top_k"])
def test_a_submodule_the_stand_in_lacks_raises_import_error(name: str) -> None:
    with pytest.raises(ImportError):
        exec(f"from sgl_kernel import {name}", {})
    with pytest.raises(ImportError):
        importlib.import_module(f"sgl_kernel.{name}")


@pytest.mark.parametrize("name", ["__wrapped__", "__file_not_there__", "__torch_function__"])
def test_dunder_names_are_attribute_errors(name: str) -> None:
    with pytest.raises(AttributeError):
        getattr(sgl_kernel, name)


def test_a_name_sglang_does_not_import_is_refused_with_where_to_add_it() -> None:
    with pytest.raises(AttributeError, match="known_imports.py"):
        sgl_kernel.not_a_kernel_sglang_imports  # noqa: B018
    with pytest.raises(ImportError):
        exec("from sgl_kernel import not_a_kernel_sglang_imports", {})


def test_all_lists_what_the_package_defines() -> None:
    assert sorted(sgl_kernel.__all__) == sgl_kernel.__all__
    assert all(hasattr(sgl_kernel, name) for name in sgl_kernel.__all__)
