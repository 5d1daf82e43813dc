"""A server group's job: nodes from the parallelism and GPUs per node, checked against the partitions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cluster import Partition, check_shape, job_shape
from harness.config import SlurmExecutor, load_matrix
from harness.errors import ConfigError
from harness.plan import ServerConfig, expand

GPU = """
name: g
hardware: {kind: gpu, gpu: B200, gpus_per_replica: 16}
models: {m: {id: org/m}}
workloads: {w: {kind: random, input_tokens: 8, output_tokens: 8}}
axes: {parallel: [{tp: 2, dp: 8, ep: 16}, {tp: 16}]}
"""
CLUSTER = [Partition("gpu", nodes=4, cpus_per_node=64, gpus_per_node=8, default=True),
           Partition("small", nodes=1, cpus_per_node=8, gpus_per_node=4, default=False)]


@pytest.fixture
def servers(write_matrix: Callable[[str], Path]) -> list[ServerConfig]:
    return [g.server for g in expand(load_matrix(write_matrix(GPU))).groups]


def test_a_replica_wider_than_a_node_spans_nodes(servers: list[ServerConfig]) -> None:
    shape = job_shape(servers[0], SlurmExecutor(gpus_per_node=8))
    assert (shape.nodes, shape.ranks_per_node, shape.gpus_per_node) == (2, 8, 8)
    assert job_shape(servers[0], SlurmExecutor()).nodes == 1  # no gpus_per_node: one node holds the replica
    check_shape(servers[0], shape, CLUSTER, "g.yaml")


def test_a_job_no_partition_holds_is_refused(servers: list[ServerConfig]) -> None:
    with pytest.raises(ConfigError, match="no partition holds") as err:
        check_shape(servers[1], job_shape(servers[1], SlurmExecutor()), CLUSTER, "g.yaml")  # 16 GPUs on one node
    assert "g.yaml" in str(err.value) and "gpus_per_node" in str(err.value)
    with pytest.raises(ConfigError, match="no partition holds"):
        check_shape(servers[1], job_shape(servers[1], SlurmExecutor(gpus_per_node=4, partition="small")), CLUSTER,
                    "g.yaml")  # 4 nodes asked of a 1-node partition
    with pytest.raises(ConfigError, match="no partition named 'big'"):
        check_shape(servers[1], job_shape(servers[1], SlurmExecutor(gpus_per_node=8, partition="big")), CLUSTER,
                    "g.yaml")


def test_ranks_must_split_evenly(servers: list[ServerConfig]) -> None:
    with pytest.raises(ConfigError, match="do not split evenly"):
        check_shape(servers[1], job_shape(servers[1], SlurmExecutor(gpus_per_node=6)), CLUSTER, "g.yaml")
