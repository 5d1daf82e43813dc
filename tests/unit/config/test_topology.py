"""The topology axis: shorthands, labels, selectors, and ids of colocated servers unchanged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.config import load_matrix
from harness.config.topology import Topology
from harness.errors import ConfigError
from harness.plan import expand

BASE = """
name: m
models: {m: {id: org/m}}
workloads: {w: {kind: random, input_tokens: 8, output_tokens: 8}}
"""


@pytest.mark.parametrize(("value", "kind", "label", "parts"), [
    ("colocated", "colocated", "colocated", 1), ({"replicas": 2}, "replicas", "r2", 2),
    ({"replicas": 3, "policy": "cache_aware"}, "replicas", "r3-cache_aware", 3),
    ({"prefill": 1, "decode": 2}, "pd", "1p2d", 3),
    ({"prefill": 2, "decode": 1, "connector": "NixlConnector"}, "pd", "2p1d-NixlConnector", 3),
])
def test_shorthands_and_labels(value: object, kind: str, label: str, parts: int) -> None:
    topology = Topology.model_validate(value)
    assert (topology.kind, topology.label, topology.parts) == (kind, label, parts)
    assert topology.matches(label) and topology.matches(kind)


def test_colocated_servers_keep_their_ids_and_labels(write_matrix: Callable[[str], Path]) -> None:
    plain = expand(load_matrix(write_matrix(BASE))).groups[0].server
    axis = expand(load_matrix(write_matrix(BASE + "axes: {topology: [colocated, {replicas: 2}]}\n", "b.yaml"))).groups
    assert axis[0].server.server_id == plain.server_id and axis[0].server.label == plain.label
    assert axis[1].server.server_id != plain.server_id and axis[1].server.label == plain.label + "/r2"


@pytest.mark.parametrize(("text", "hint"), [
    ("axes: {topology: [{replicas: 1}]}", "replicas"),
    ("axes: {topology: [{prefill: 0, decode: 1}]}", "prefill"),
    ("axes: {topology: [{replicas: 2, policy: fastest}]}", "policy"),
    ("axes: {topology: [sharded]}", "topology"),
])
def test_bad_topologies_name_the_key(write_matrix: Callable[[str], Path], text: str, hint: str) -> None:
    path = write_matrix(BASE + text + "\n")
    with pytest.raises(ConfigError) as err:
        load_matrix(path)
    assert str(path) in str(err.value) and hint in str(err.value), str(err.value)
