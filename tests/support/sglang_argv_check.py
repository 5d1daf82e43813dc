"""Feed command lines to SGLang's own server-argument parser; run in a subprocess by test_sglang.py.

SGLang is installed without its GPU dependencies under ``build/sglang-args`` (see the Makefile's setup), so it is
imported here, away from the test process: its modules must not leak into other tests' ``sys.modules``.
``prepare_server_args`` is what ``python -m sglang.launch_server`` calls: argparse with SGLang's choices, then a
``ServerArgs`` record. Resolution (``resolve_once``) needs the model's config and a device, so it is not run; the
speculative algorithm, which argparse takes as free text, is looked up in SGLang's registry instead. SGLang's parser
is built once for all the lines (``build_parser_once``); the rest of ``prepare_server_args`` runs for each.

stdin: a JSON list of argument lists (what follows ``-m sglang.launch_server``).
stdout: a JSON list of ``{"ok": bool, "error": str, "args": {field: value}}``, one per argument list.
"""

from __future__ import annotations

import argparse
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


def build_parser_once() -> None:
    """Let every ``prepare_server_args`` call after the first take the parser the first one built.

    ``prepare_server_args`` builds SGLang's parser afresh for each command line: 500-odd flags read from its records'
    annotations, 0.05 s a line, nine tenths of this check's time over the tests' hundred-odd lines. Parsing leaves a
    parser as it was (the verdicts and records of the tests' lines are the same either way, in either order), so a
    later call's new parser takes the first one's state instead of being built again.
    """
    from sglang.srt.server_args import ServerArgs

    build = ServerArgs.add_cli_args
    built: list[argparse.ArgumentParser] = []

    def add_cli_args(parser: argparse.ArgumentParser) -> None:
        if built:
            parser.__dict__.update(built[0].__dict__)
        else:
            build(parser)
            built.append(parser)

    ServerArgs.add_cli_args = staticmethod(add_cli_args)


def main() -> None:
    build_parser_once()
    results = [check(argv) for argv in json.load(sys.stdin)]
    json.dump(results, sys.stdout, default=str)


if __name__ == "__main__":
    main()
