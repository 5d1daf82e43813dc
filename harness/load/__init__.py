"""The load generator: prompts (``prompts``), the streaming client (``client``), the fixed-concurrency
scheduler (``runner``) and the per-request records they produce (``records``)."""
