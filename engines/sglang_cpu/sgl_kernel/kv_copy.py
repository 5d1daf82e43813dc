"""``copy_all_layer_kv_cache_cpu``: move KV slots within every layer's K and V buffer, addressed by raw pointers.

SGLang 0.5.23 hands the KV pool's buffers over as ``data_ptrs`` (a ``uint64`` tensor of each buffer's
``data_ptr()``, K layers then V layers) and ``strides`` (each buffer's row size in bytes), and moves the accepted
draft tokens' KV rows to their final slots with it (``MHATokenToKVPool._move_kv_cache_impl`` in
``srt/mem_cache/memory_pool.py``). Its Triton kernel (``copy_all_layer_kv_cache_tiled`` in
``kernels/ops/kvcache/cache_move.py``) loads every source row of a buffer before it stores any, so it is safe when
sources and targets overlap; this does the same with one gather and one scatter per buffer.
"""

from __future__ import annotations

import ctypes

import torch


def _rows(address: int, rows: int, row_bytes: int) -> torch.Tensor:
    """Bytes ``[address, address + rows * row_bytes)`` as a ``(rows, row_bytes)`` uint8 tensor sharing the memory
    (the caller's buffer owns it and outlives the call)."""
    storage = (ctypes.c_uint8 * (rows * row_bytes)).from_address(address)
    return torch.frombuffer(storage, dtype=torch.uint8).view(rows, row_bytes)


def copy_all_layer_kv_cache_cpu(
    data_ptrs: torch.Tensor,
    strides: torch.Tensor,
    tgt_loc: torch.Tensor,
    src_loc: torch.Tensor,
) -> None:
    """For each buffer, row ``tgt_loc[j]`` takes the bytes row ``src_loc[j]`` had before the call."""
    if tgt_loc.numel() != src_loc.numel():
        raise ValueError(f"tgt_loc has {tgt_loc.numel()} slots, src_loc {src_loc.numel()}")
    if tgt_loc.numel() == 0:
        return
    tgt = tgt_loc.reshape(-1).to(torch.int64)
    src = src_loc.reshape(-1).to(torch.int64)
    if int(torch.minimum(tgt.min(), src.min())) < 0:
        raise IndexError("copy_all_layer_kv_cache_cpu: negative slot")
    rows = int(torch.maximum(tgt.max(), src.max())) + 1  # only the rows the copy touches need a view
    for address, row_bytes in zip(data_ptrs.tolist(), strides.tolist(), strict=True):
        buffer = _rows(int(address), rows, int(row_bytes))
        buffer[tgt] = buffer[src]  # the gather copies first: overlapping slots read their old bytes
