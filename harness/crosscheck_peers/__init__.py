"""The peer load clients the cross-check drives beside ours (``harness crosscheck --client NAME``): one module per
peer, each an entry of ``PEER_CLIENTS`` that builds the peer's argv and reads its result file (``peer``)."""

from harness.crosscheck_peers.peer import (
    PEER_CLIENTS,
    PeerClient,
    PeerNotInstalled,
    length_bounds,
    peer_client,
    round_seed,
)

__all__ = ["length_bounds", "peer_client", "PEER_CLIENTS", "PeerClient", "PeerNotInstalled", "round_seed"]
