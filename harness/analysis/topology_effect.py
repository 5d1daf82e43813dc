"""What a deployment bought: each replicated or disaggregated cell beside its colocated twin.

The twin is the cell that differs only in ``topology: colocated`` (same model, runtime, precision, parallelism,
speculation, workload and concurrency). From the pair come the throughput ratio over their launches (a lead, a tie
or noise unknown: ``harness.analysis.noise``), throughput per device of each (a deployment holds every server's
devices), and, for prefill/decode, InferenceX's split: input tokens per prefill device and output tokens per
decode device. TTFT and TPOT are the medians each cell measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.analysis.cost import PricedCell
from harness.analysis.noise import Margin, launch_throughputs, margin
from harness.config.hardware import GpuHardware
from harness.config.topology import Disaggregated
from harness.plan.cells import Cell


@dataclass(frozen=True, slots=True)
class TopologyPair:
    deployed: PricedCell
    colocated: PricedCell

    @property
    def margin(self) -> Margin | None:
        """The deployment's output tok/s over the colocated cell's, over their launches."""
        a, b = self.colocated.summary, self.deployed.summary
        return margin(launch_throughputs(a), launch_throughputs(b)) if a is not None and b is not None else None

    @property
    def devices(self) -> int | None:
        return self.deployed.cost.price.devices if self.deployed.cost is not None else None

    @property
    def tok_s_per_device(self) -> tuple[float | None, float | None]:
        """Output tok/s per device: (deployment, colocated)."""
        return (self.deployed.cost.tok_s_per_device if self.deployed.cost else None,
                self.colocated.cost.tok_s_per_device if self.colocated.cost else None)

    @property
    def kv_transfer_ms(self) -> float | None:
        """Mean KV transfer time from prefill to decode in the deployed cell, where the connector exports it."""
        summary = self.deployed.summary
        stats = summary.server.kv_transfer_ms if summary is not None and summary.server is not None else None
        return stats.mean if stats is not None else None

    @property
    def split(self) -> tuple[float, float] | None:
        """InferenceX's split for prefill/decode: (input tok/s per prefill device, output tok/s per decode
        device); None for replicas, without figures, or on a CPU (where every part shares one machine)."""
        server = self.deployed.cell.server
        topology, summary, devices = server.topology.root, self.deployed.summary, self.devices
        if not isinstance(topology, Disaggregated) or summary is None or devices is None or \
                not isinstance(server.hardware, GpuHardware):
            return None
        per_part = devices / topology.parts
        input_tok_s = summary.total_token_throughput - summary.output_throughput
        return input_tok_s / (per_part * topology.prefill), summary.output_throughput / (per_part * topology.decode)


def _colocated_twin(cell: Cell) -> dict[str, object]:
    server = cell.server
    return {"model": server.model_name, "runtime": server.runtime, "precision": server.precision.label,
            "parallel": server.parallel.label, "speculation": server.speculation.label,
            "workload": cell.workload_name, "concurrency": cell.concurrency, "topology": "colocated",
            "request_rate": cell.load.request_rate}


def topology_pairs(rows: Sequence[PricedCell]) -> list[TopologyPair]:
    """Every deployed cell that has a colocated twin in ``rows``, in row order."""
    pairs = []
    for row in rows:
        if row.cell.server.topology.is_colocated:
            continue
        twin = _colocated_twin(row.cell)
        colocated = next((r for r in rows if r.cell.matches(twin)), None)
        if colocated is not None:
            pairs.append(TopologyPair(deployed=row, colocated=colocated))
    return pairs
