"""What a peer load client is to the cross-check, and the registry of them (``harness crosscheck --client NAME``).

A peer is another tool's benchmark client (vLLM's ``vllm bench serve``, NVIDIA's AIPerf, GuideLLM,
kubernetes-sigs' inference-perf), run as a black box in a subprocess: its entry here builds the argv that asks it for
the cross-check's workload (fixed concurrency, the same number of requests, random prompts of the same lengths,
streaming, the same output length with EOS ignored, a fresh seed per round) and reads the figures back from the
result file the tool documents. What a peer cannot be asked for, or defines differently from the harness, is its
entry's ``notes``, printed and stored beside the figures: never papered over.

Each peer but vLLM's lives in its own environment, ``build/peers/<name>/`` (``make peers``,
``scripts/install-peers.sh``): their dependency trees fight vLLM's, so none is ever installed in the harness's venv.
``PEER_CLIENTS`` lists the entries (entry-point group ``harness.crosscheck_clients``, ``harness.registry``);
running one and interleaving it with our client is ``harness.crosscheck``'s.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar

from harness.crosscheck_result import ClientFigures, CrosscheckSpec
from harness.errors import HarnessError
from harness.registry import Registry, declares


class PeerNotInstalled(HarnessError):
    """The named peer's environment is not there: ``make peers`` installs it."""


class PeerClient:
    """One peer load client: subclass it in a module of its own, declare the class attributes, list it in the
    ``harness.crosscheck_clients`` entry points."""

    name: ClassVar[str]
    """The ``--client`` name, and the folder of its environment under ``build/peers/``."""
    title: ClassVar[str]
    """How the printed table names it (``vLLM``, ``AIPerf``)."""
    executable: ClassVar[str]
    """Its console script in ``build/peers/<name>/bin/``."""
    result_file: ClassVar[str]
    """Where its result lands, relative to the run's own directory (the one ``argv`` is given)."""
    notes: ClassVar[tuple[str, ...]]
    """Where its figures are defined or obtained differently from ours, and what it cannot be asked for."""

    def program(self, spec: CrosscheckSpec) -> list[str]:
        """The command that starts it: its console script in its own environment."""
        return [str(spec.peers_dir / self.name / "bin" / self.executable)]

    def check_installed(self, peers_dir: Path) -> None:
        """Raise ``PeerNotInstalled`` with the fix when its environment under ``peers_dir`` is missing."""
        program = peers_dir / self.name / "bin" / self.executable
        if not program.is_file():
            raise PeerNotInstalled(f"{self.title}'s client is not installed ({program} is missing); run `make peers` "
                                   f"(it installs each peer into build/peers/<name>/, never into .venv)")

    def argv(self, spec: CrosscheckSpec, round_: int, run_dir: Path) -> list[str]:
        """The whole command for one round, writing its result to ``run_dir / result_file``."""
        raise NotImplementedError

    def figures(self, result: Path, round_: int) -> ClientFigures:
        """The cross-check's figures read from the peer's result file of one round."""
        raise NotImplementedError


def round_seed(spec: CrosscheckSpec, round_: int) -> int:
    """A fresh seed per round (so no round is served from another's prefix cache), the same for every peer."""
    return spec.workload.seed + 1000 * (round_ + 1)


def length_bounds(mean: int, range_ratio: float) -> tuple[int, int]:
    """[floor(L(1-r)), ceil(L(1+r))], at least 1: the bounds our random workload draws lengths from uniformly
    (``harness.load.random_prompts.draw_length``), for the peers that take a min and a max."""
    low = max(1, math.floor(mean * (1 - range_ratio)))
    return low, max(low, math.ceil(mean * (1 + range_ratio)))


def ms(seconds: float) -> float:
    return 1000.0 * seconds


PEER_CLIENTS: Registry[type[PeerClient]] = Registry(
    "crosscheck client", "harness.crosscheck_clients",
    check=declares("crosscheck client", ("title", "executable", "result_file", "notes"),
                   "harness.crosscheck_peers.peer.PeerClient"))
"""Every peer client, by its ``--client`` name."""


def peer_client(name: str) -> PeerClient:
    """The entry named ``name``; an unknown name is a ``HarnessError`` listing the known ones."""
    if name not in PEER_CLIENTS:
        raise HarnessError(PEER_CLIENTS.unknown(name) + " (harness crosscheck --client)")
    return PEER_CLIENTS.get(name)()
