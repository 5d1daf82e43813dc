"""``copy_all_layer_kv_cache_cpu`` moves rows of every buffer it is given by raw pointer, as SGLang's KV pool hands
them over (``data_ptr()`` in a uint64 tensor, row strides in bytes), and reads every source before writing."""

from __future__ import annotations

import torch

from sgl_kernel import copy_all_layer_kv_cache_cpu


def buffers() -> list[torch.Tensor]:
    """Two layers' K and V, of two dtypes and widths: row r of buffer b is filled with 10 * b + r."""
    shapes = [((6, 2, 4), torch.bfloat16), ((6, 2, 4), torch.bfloat16), ((6, 1, 8), torch.float32),
              ((6, 1, 8), torch.float32)]
    out = []
    for b, (shape, dtype) in enumerate(shapes):
        rows = (torch.arange(shape[0]).view(-1, 1, 1) + 10 * b).to(dtype)
        out.append(rows.expand(shape).contiguous())
    return out


def pointers(tensors: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    data_ptrs = torch.tensor([t.data_ptr() for t in tensors], dtype=torch.uint64)
    strides = torch.tensor([t.stride(0) * t.dtype.itemsize for t in tensors])
    return data_ptrs, strides


def test_rows_move_in_every_buffer() -> None:
    kv = buffers()
    before = [t.clone() for t in kv]
    copy_all_layer_kv_cache_cpu(*pointers(kv), torch.tensor([0, 5]), torch.tensor([3, 1]))
    for old, new in zip(before, kv, strict=True):
        expected = old.clone()
        expected[0], expected[5] = old[3], old[1]
        assert torch.equal(new, expected)


def test_overlapping_moves_read_the_old_rows() -> None:
    # a shift by one: a copy that wrote row 2 before reading it would smear row 1 down the buffer
    kv = buffers()
    before = [t.clone() for t in kv]
    copy_all_layer_kv_cache_cpu(*pointers(kv), torch.tensor([2, 3, 4]), torch.tensor([1, 2, 3]))
    for old, new in zip(before, kv, strict=True):
        assert torch.equal(new[2:5], old[1:4]) and torch.equal(new[:2], old[:2]) and torch.equal(new[5], old[5])


def test_no_slots_is_a_no_op() -> None:
    kv = buffers()
    before = [t.clone() for t in kv]
    empty = torch.empty(0, dtype=torch.int64)
    copy_all_layer_kv_cache_cpu(*pointers(kv), empty, empty)
    assert all(torch.equal(a, b) for a, b in zip(before, kv, strict=True))
