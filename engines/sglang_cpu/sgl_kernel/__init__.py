"""A small, explicit stand-in for SGLang's ``sgl_kernel`` package, so that the real ``sglang==0.5.23`` server runs on
a CPU without AMX or AVX-512, n-gram speculative decoding included.

The real ``sgl_kernel`` is SGLang's compiled kernel library ("common_ops"): it is not on the package index for this
machine, and its CPU kernels are written for AMX/AVX-512. This package takes its place on ``sys.path``
(``engines/sglang_cpu``, put there by a ``.pth`` file in SGLang's venv, or ``PYTHONPATH``) and is pinned to the
SGLang version its names were checked against (``SGLANG_VERSION``; the list is ``known_imports.py``).

What is real (``REAL_OPS``): the ten ops n-gram speculative decoding reaches on the ``intel_amx`` attention backend,
written in torch after SGLang's own reference kernels (each module names the kernel it follows):

- ``kv_indices``: ``assign_req_to_token_pool_cpu``, ``assign_extend_cache_locs_cpu``,
  ``assign_draft_cache_locs_contiguous_cpu``, ``fill_bonus_tokens_cpu``, ``fill_accept_out_cache_loc_cpu``;
- ``kv_copy``: ``copy_all_layer_kv_cache_cpu``; ``tree_verify``: ``verify_tree_greedy_cpu``;
- ``speculative`` (a submodule, as SGLang imports it): ``reconstruct_indices_from_tree_mask``;
- ``attention``: ``torch.ops.sgl_kernel.decode_attention_cpu`` and ``extend_attention_cpu``, registered with
  ``torch.library`` when this package is imported (SGLang's backend imports it first).

What is a placeholder: every other name SGLang imports from ``sgl_kernel`` (``known_imports.PLACEHOLDERS``). The
module-level ``__getattr__`` answers each with a ``placeholders.Placeholder``, so the import succeeds and a call
raises ``NotImplementedError`` naming it. Submodules of the real package other than ``speculative``, dunder names and
names SGLang does not import raise ``AttributeError`` (``ImportError`` from a ``from`` import).

What is a platform fact: ``device_module`` adds the two functions SGLang's expert distribution recorder calls on
``torch.cpu`` (no stream capture, no cache to empty), which torch's CPU module lacks.

What is neither: the model's layers. This package does not define ``convert_weight_packed`` (no attribute, no torch
op), so SGLang's ``cpu_has_amx_support()`` stays False and every layer (linear, MoE, RMSNorm, activation, rotary)
runs SGLang's own torch fallback; no other torch op is registered either, so SGLang's ``hasattr(torch.ops.sgl_kernel,
...)`` probes find nothing and take their torch paths. Only the ``intel_amx`` attention backend calls the two
attention ops here, and only when asked for (``--attention-backend intel_amx``; see ``sglang_cpu_launch``).
"""

from __future__ import annotations

from . import attention, device_module, speculative
from .imports_check import import_drift, sgl_kernel_names
from .known_imports import KNOWN_IMPORTS, REAL_OPS, SGLANG_VERSION
from .kv_copy import copy_all_layer_kv_cache_cpu
from .kv_indices import (
    assign_draft_cache_locs_contiguous_cpu,
    assign_extend_cache_locs_cpu,
    assign_req_to_token_pool_cpu,
    fill_accept_out_cache_loc_cpu,
    fill_bonus_tokens_cpu,
)
from .placeholders import Placeholder, resolve
from .tree_verify import verify_tree_greedy_cpu

__all__ = [
    "KNOWN_IMPORTS",
    "Placeholder",
    "REAL_OPS",
    "SGLANG_VERSION",
    "assign_draft_cache_locs_contiguous_cpu",
    "assign_extend_cache_locs_cpu",
    "assign_req_to_token_pool_cpu",
    "attention",
    "copy_all_layer_kv_cache_cpu",
    "device_module",
    "fill_accept_out_cache_loc_cpu",
    "fill_bonus_tokens_cpu",
    "import_drift",
    "sgl_kernel_names",
    "speculative",
    "verify_tree_greedy_cpu",
]


device_module.install()


def __getattr__(name: str) -> Placeholder:
    """A name this package does not define: a placeholder, or ``AttributeError`` (``placeholders.resolve``)."""
    return resolve(name)
