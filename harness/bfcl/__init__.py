"""BFCL as a library: the ``bfcl-eval`` wheel's data, conversion and checkers made importable without its vendor
SDKs (``package``), and BFCL's own conversion of function docs to OpenAI tools (``tools``).

A low layer of its own because two stages need it: the parity stage scores with it, and the fixture builder trains
the tool-calling fixture on prompts rendered exactly as a parity run sends them.
"""

from harness.bfcl.package import (
    BFCL_VERSION,
    INSTALL_HINT,
    Bfcl,
    BfclAggregation,
    BfclUnavailable,
    bfcl,
    bfcl_aggregation,
)
from harness.bfcl.sample import seeded_sample
from harness.bfcl.tools import ToolSet, calls_schema, to_tools

__all__ = [
    "Bfcl", "BfclAggregation", "BfclUnavailable", "BFCL_VERSION", "bfcl", "bfcl_aggregation", "calls_schema",
    "INSTALL_HINT", "seeded_sample", "to_tools", "ToolSet",
]
