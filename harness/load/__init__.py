"""The load generator: prompts (``prompts``), the streaming client (``client``), the fixed-concurrency
scheduler (``runner``) and the per-request records they produce (``records``)."""

from harness.load.prompts import PROMPT_BLOCK, make_requests
from harness.load.records import RequestRecord, write_jsonl
from harness.load.runner import LoadSpec, run_load

__all__ = [
    "LoadSpec", "make_requests", "PROMPT_BLOCK", "RequestRecord", "run_load", "write_jsonl",
]
