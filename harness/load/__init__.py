"""The load generator: prompts (``prompts``), the streaming client (``client``), the fixed-concurrency
scheduler (``runner``) and the per-request records they produce (``records``)."""

from harness.load.load_spec import LoadSpec
from harness.load.progress import progress_wanted
from harness.load.prompts import PROMPT_BLOCK, WORKLOAD_KINDS, make_requests
from harness.load.records import RequestRecord, write_jsonl
from harness.load.runner import run_load

__all__ = [
    "LoadSpec", "make_requests", "progress_wanted", "PROMPT_BLOCK", "WORKLOAD_KINDS", "RequestRecord", "run_load",
    "write_jsonl",
]
