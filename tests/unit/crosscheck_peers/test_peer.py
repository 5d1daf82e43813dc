"""The registry of peer clients: the names it lists, the refusal of an unknown or uninstalled peer, the declarations
every entry must make, and the workload helpers every entry shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.crosscheck_peers import (
    PEER_CLIENTS,
    PeerClient,
    PeerNotInstalled,
    length_bounds,
    peer_client,
    round_seed,
)
from harness.errors import HarnessError

from tests.support.peer_runs import peer_spec


def test_every_peer_is_declared_and_carries_its_name() -> None:
    assert PEER_CLIENTS.names() == ("aiperf", "guidellm", "inference-perf", "vllm")
    for name, entry in PEER_CLIENTS.entries().items():
        assert entry.name == name and entry.title and entry.notes and entry.result_file


def test_an_unknown_peer_names_the_known_ones() -> None:
    with pytest.raises(HarnessError, match="unknown crosscheck client 'genai-perf'; known .*aiperf, guidellm"):
        peer_client("genai-perf")


def test_a_peer_not_installed_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(PeerNotInstalled, match=r"build/peers|make peers") as caught:
        peer_client("guidellm").check_installed(tmp_path)
    assert str(tmp_path / "guidellm" / "bin" / "guidellm") in str(caught.value) and "make peers" in str(caught.value)
    script = tmp_path / "guidellm" / "bin" / "guidellm"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    peer_client("guidellm").check_installed(tmp_path)  # now there


def test_vllms_client_needs_no_environment_of_its_own(tmp_path: Path) -> None:
    peer_client("vllm").check_installed(tmp_path)  # the server's interpreter runs it


def test_an_entry_without_its_declarations_is_refused() -> None:
    class Half(PeerClient):
        name = "half"
        title = "Half"

    with pytest.raises(TypeError, match="does not declare executable, result_file, notes"):
        PEER_CLIENTS.register(Half)
    assert "half" not in PEER_CLIENTS


def test_the_program_is_the_console_script_in_the_peers_own_environment(tmp_path: Path) -> None:
    assert peer_client("aiperf").program(peer_spec(tmp_path)) == [str(tmp_path / "aiperf" / "bin" / "aiperf")]


def test_length_bounds_are_our_random_workloads() -> None:
    assert length_bounds(32, 0.2) == (25, 39)  # floor(25.6), ceil(38.4)
    assert length_bounds(16, 0.0) == (16, 16)
    assert length_bounds(1, 0.9) == (1, 2)


def test_each_round_has_a_fresh_seed_the_same_for_every_peer(tmp_path: Path) -> None:
    spec = peer_spec(tmp_path)
    assert [round_seed(spec, r) for r in range(3)] == [1004, 2004, 3004]
