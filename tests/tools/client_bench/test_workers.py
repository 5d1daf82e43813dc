"""The client benchmark's parts: our client's run and its timestamp instrument against the loopback server over real
sockets, the figures it reads back, and (fake-engine tier) its worker processes as ``make client-bench`` runs them.
vLLM's client and the other peers are left to the benchmark itself: importing vLLM costs a test more than all of
these, and the peers are installed only by ``make peers``. The ceiling's own parts are ``test_ceiling``."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from harness.load.openai_stream import StreamState
from harness_testing.loopback import LoopbackConfig, LoopbackServer
from tools.client_bench import (
    figures_of,
    lag_quantiles,
    loopback,
    ours,
    run_client,
    stamping,
    tokenizer_dir,
)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tokenizer_dir(tmp_path_factory.mktemp("bench-tokenizer"))


async def test_our_client_streams_every_token_and_stamps_every_chunk_when_asked(tokenizer: Path) -> None:
    server = LoopbackServer(LoopbackConfig(itl_ms=1.0, stamp=True))
    async with server.serve() as url:
        stamped = await ours(url, tokenizer, concurrency=2, requests=4, tokens=8, stamped=True)
        plain = await ours(url, tokenizer, concurrency=2, requests=4, tokens=8)
    assert (stamped["completed"], stamped["failed"]) == (4, 0) and stamped["tok_s"] > 0
    assert len(stamped["lags_ms"]) == 4 * 8  # one stamped chunk per streamed token
    assert plain["lags_ms"] == [] and plain["tok_per_cpu_s"] > 0


def test_the_instrument_is_taken_off_the_client_even_when_the_run_fails() -> None:
    original = StreamState.feed
    with pytest.raises(RuntimeError), stamping([]):
        assert StreamState.feed is not original
        raise RuntimeError("the run failed")
    assert StreamState.feed is original


def test_the_tokenizer_round_trips_any_text(tokenizer: Path) -> None:
    # GuideLLM cuts a corpus to a token count and decodes it: a vocabulary that drops unknown words sends ""
    from tokenizers import Tokenizer

    loaded = Tokenizer.from_file(str(tokenizer / "tokenizer.json"))
    text = "It was the best of times, ünïcode included"
    assert loaded.decode(loaded.encode(text).ids) == text


def test_lag_quantiles_are_the_median_and_the_nearest_rank_p99() -> None:
    lags = [float(x) for x in reversed(range(101))]
    assert lag_quantiles(lags) == (50.0, 99.0)
    assert lag_quantiles([3.0, 1.0]) == (statistics.median([1.0, 3.0]), 1.0)


def test_a_worker_line_missing_a_figure_is_an_error() -> None:
    line = {"tok_s": 1, "tok_per_cpu_s": "2.5", "completed": 3, "failed": 0, "lags_ms": [1]}
    assert figures_of(line) == {"tok_s": 1.0, "tok_per_cpu_s": 2.5, "completed": 3, "failed": 0, "lags_ms": [1.0]}
    with pytest.raises(KeyError):
        figures_of({k: v for k, v in line.items() if k != "lags_ms"})


@pytest.mark.fake_engine
def test_our_client_runs_in_worker_processes_against_the_loopback_process(tokenizer: Path) -> None:
    with loopback(0.0, 0.0) as url:
        runs = run_client("ours", url, tokenizer, concurrency=2, requests=4, tokens=8, runs=2)
    assert [(r["completed"], r["failed"]) for r in runs] == [(4, 0), (4, 0)]
    assert all(r["tok_s"] > 0 and r["tok_per_cpu_s"] > 0 for r in runs)
