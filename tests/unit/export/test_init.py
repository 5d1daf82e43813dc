"""The curated public surface of harness.export: sorted, complete, every name defined."""

from __future__ import annotations

import importlib


def test_all_is_sorted_and_exports_every_public_name() -> None:
    module = importlib.import_module("harness.export")
    public = [name for name in vars(module) if not name.startswith("_") and not isinstance(
        getattr(module, name), type(importlib))]
    assert module.__all__ == sorted(public, key=str.casefold)
