"""The cross-check with vLLM's real benchmark client (slow: importing vLLM takes seconds) against the loopback
server: its parser accepts every flag we pass, and a round produces the figures we read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import RandomWorkload
from harness.crosscheck import crosscheck
from harness.crosscheck_peers import peer_client
from harness.crosscheck_result import FIGURES, CrosscheckSpec
from harness.servers.vllm import VLLM_METRICS
from harness_testing.loopback import LoopbackConfig, LoopbackServer

pytestmark = pytest.mark.fake_engine


@pytest.fixture
def hf_tokenizer_dir(tiny_tokenizer_dir: Path, tmp_path: Path) -> Path:
    """The tiny tokenizer plus the config transformers needs to load it (as vLLM's client does)."""
    (tmp_path / "tokenizer.json").write_bytes((tiny_tokenizer_dir / "tokenizer.json").read_bytes())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>", "eos_token": "<|im_end|>"}))
    return tmp_path


def _spec(url: str, tokenizer_dir: Path) -> CrosscheckSpec:
    workload = RandomWorkload(input_tokens=16, output_tokens=8, num_requests=8, warmup_requests=1)
    return CrosscheckSpec(base_url=url, model="m", tokenizer_dir=tokenizer_dir, workload=workload, concurrency=2,
                          rounds=1, server_metrics=VLLM_METRICS)


def test_vllm_parser_accepts_our_flags(hf_tokenizer_dir: Path, tmp_path: Path) -> None:
    from vllm.benchmarks.serve import add_cli_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    argv = peer_client("vllm").argv(_spec("http://127.0.0.1:1", hf_tokenizer_dir), 0, tmp_path)
    args = parser.parse_args(argv[3:])
    assert (args.random_input_len, args.random_output_len, args.max_concurrency, args.num_prompts) == (16, 8, 2, 8)
    assert args.ignore_eos and args.save_result and args.num_warmups == 0


@pytest.mark.timeout(300)
async def test_one_round_against_the_loopback_server(hf_tokenizer_dir: Path) -> None:
    # Latencies well above either client's per-request overhead (a millisecond or two on a busy 2-core machine), so
    # the ratios compare the clients' definitions rather than their scheduling noise; 5 ms / 2 ms flaked at 2x.
    async with LoopbackServer(LoopbackConfig(ttft_ms=40, itl_ms=10)).serve() as url:
        result = await crosscheck(_spec(url, hf_tokenizer_dir))
    vllm = next(r for r in result.rounds if r.client == "vllm")
    assert vllm.completed == 8 and vllm.failed == 0
    assert vllm.median_tpot_ms == pytest.approx(10.0, rel=0.3)
    ratios = result.ratios()
    assert set(ratios) == set(FIGURES) and all(ratio > 0 for ratio in ratios.values())
    # Agreement is judged on the medians the server paces; means and throughput (whose durations the two clients
    # start at different moments) move with one stalled request on a loaded machine, so they are only present.
    assert all(0.5 < ratios[figure] < 2.0 for figure in ("median_ttft_ms", "median_tpot_ms")), ratios
