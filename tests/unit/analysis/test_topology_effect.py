"""A deployment beside its colocated twin: the ratio over launches, per-device throughput, the P/D split."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.analysis.cost import DEFAULT_TABLE, price_cells, replica_price
from harness.analysis.topology_effect import topology_pairs
from harness.config import load_matrix
from harness.plan import expand
from harness.store import Store

from tests.support.stored_cells import store_launches, summary

MATRIX = """
name: t
hardware: {kind: gpu, gpu: H100, gpus_per_replica: 8}
models: {m: {id: org/m}}
workloads: {w: {kind: random, input_tokens: 128, output_tokens: 64}}
axes: {concurrency: [8], topology: [colocated, {replicas: 2}, {prefill: 1, decode: 3}]}
"""
# output tok/s per launch: two replicas double it; 1P3D triples it
LAUNCHES = {"colocated": [100.0, 104.0, 98.0], "r2": [198.0, 205.0, 201.0], "1p3d": [300.0, 290.0, 310.0]}


def test_pairs_ratio_per_device_and_split(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    plan = expand(load_matrix(write_matrix(MATRIX)))
    store = Store(tmp_path, plan.matrix.name)
    for cell in plan.cells:
        store_launches(store, cell, [summary(v, 10.0) for v in LAUNCHES[cell.server.topology.label]])
    pairs = {p.deployed.cell.server.topology.label: p
             for p in topology_pairs(price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE)))}
    assert set(pairs) == {"r2", "1p3d"}
    r2, pd = pairs["r2"], pairs["1p3d"]
    assert r2.devices == 16 and pd.devices == 32
    assert r2.margin is not None and r2.margin.call == "b" and r2.margin.interval is not None
    assert r2.margin.interval.ratio == pytest.approx(2.0, rel=0.03)
    deployed, colocated = r2.tok_s_per_device
    assert deployed == pytest.approx(colocated, rel=0.05)  # twice the tokens on twice the GPUs
    assert r2.split is None
    assert pd.split is not None
    inputs, outputs = pd.split  # 409.6 input tok/s (the builder's) on 8 prefill GPUs; output on 24 decode GPUs
    assert inputs == pytest.approx(409.6 / 8, rel=0.01) and outputs == pytest.approx(300.0 / 24, rel=0.02)


def test_a_deployment_is_a_recipe_of_its_own(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    from harness.analysis.frontier import build_series

    plan = expand(load_matrix(write_matrix(MATRIX)))
    store = Store(tmp_path, plan.matrix.name)
    for cell in plan.cells:
        store_launches(store, cell, [summary(v, 10.0) for v in LAUNCHES[cell.server.topology.label]])
    series = build_series(price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE)))
    assert sorted(s.name for s in series) == ["vllm/bf16/off", "vllm/bf16/off/1p3d", "vllm/bf16/off/r2"]


def test_disaggregation_is_a_lever_against_the_lecture(write_matrix: Callable[..., Path], tmp_path: Path) -> None:
    from harness.analysis.cost_levers import measure_levers

    plan = expand(load_matrix(write_matrix(MATRIX)))
    store = Store(tmp_path, plan.matrix.name)
    for cell in plan.cells:
        store_launches(store, cell, [summary(v, 10.0) for v in LAUNCHES[cell.server.topology.label]])
    levers = {lever.after: lever for lever in measure_levers(
        price_cells(plan, store, replica_price(plan.matrix, DEFAULT_TABLE)), plan.matrix) if lever.axis == "topology"}
    assert set(levers) == {"r2", "1p3d"}
    pd = levers["1p3d"]  # 3x the tokens on 4x the GPUs: a third dearer per token, outside the launch noise
    assert pd.claim is not None and pd.claim.text.startswith("Disaggregation")
    assert pd.median_pct == pytest.approx((100.0 / 8) / (300.0 / 32) * 100 - 100, rel=0.05)
    assert pd.call == "dearer" and pd.verdict == "disagrees: it made tokens dearer here"
    assert levers["r2"].claim is None and levers["r2"].call == "tie"
