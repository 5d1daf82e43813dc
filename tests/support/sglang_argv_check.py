"""Feed command lines to SGLang's own server-argument parser; run in a subprocess by test_sglang.py.

SGLang is installed without its GPU dependencies under ``build/sglang-args`` (see the Makefile's setup), so it is
imported here, away from the test process: its modules must not leak into other tests' ``sys.modules``.
``prepare_server_args`` is what ``python -m sglang.launch_server`` calls: argparse with SGLang's choices, then a
``ServerArgs`` record. Resolution (``resolve_once``) needs the model's config and a device, so it is not run; the
speculative algorithm, which argparse takes as free text, is looked up in SGLang's registry instead.

stdin: a JSON list of argument lists (what follows ``-m sglang.launch_server``).
stdout: a JSON list of ``{"ok": bool, "error": str, "args": {field: value}}``, one per argument list.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

FIELDS = ("model_path", "host", "port", "tp_size", "attn_dp_size", "dp_size", "ep_size", "moe_a2a_backend",
          "quantization", "kv_cache_dtype", "dtype", "context_length", "max_running_requests", "random_seed",
          "speculative_algorithm", "speculative_draft_model_path", "speculative_num_steps", "speculative_eagle_topk",
          "speculative_num_draft_tokens", "speculative_ngram_max_bfs_breadth", "chunked_prefill_size",
          "disable_radix_cache", "tool_call_parser", "grammar_backend", "enable_metrics", "mem_fraction_static",
          "device", "served_model_name", "revision", "nnodes", "node_rank", "dist_init_addr", "disaggregation_mode",
          "disaggregation_transfer_backend", "disaggregation_bootstrap_port", "attention_backend",
          "disable_cuda_graph", "disable_overlap_schedule", "max_total_tokens")


def check(argv: list[str]) -> dict[str, object]:
    from sglang.srt.server_args import prepare_server_args

    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            args = prepare_server_args(argv)
        if args.speculative_algorithm is not None:
            from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

            SpeculativeAlgorithm.from_string(args.speculative_algorithm)
    except SystemExit:
        return {"ok": False, "error": stderr.getvalue().strip().splitlines()[-1:], "args": {}}
    except Exception as exc:  # accepted by argparse, refused by the record or the algorithm registry
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "args": {}}
    return {"ok": True, "error": "", "args": {name: getattr(args, name, None) for name in FIELDS}}


def main() -> None:
    results = [check(argv) for argv in json.load(sys.stdin)]
    json.dump(results, sys.stdout, default=str)


if __name__ == "__main__":
    main()
