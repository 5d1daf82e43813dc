"""What serving costs: a price and power table per device class, and per-cell $/MTok, tok/s per device, tok/s/MW.

Prices and wattages are inputs, never measurements: each entry carries the source the report prints beside it.
The built-in table holds the capstone lecture's 2026 cloud rates (§5.2) and the all-in watts per GPU implied by
the two InferenceX pages (tok/s/GPU divided by tok/s/MW); docs/sources.md defines both. A matrix overrides it with
``cost.file`` (a YAML table of the same shape, merged over this one) and ``cost.usd_per_hour`` /
``cost.watts_all_in`` for its own hardware. Power measured on the GPU (NVML telemetry, where a cell has it)
replaces the table's watts for that cell.

The CPU default is priced as what it is, one CPU machine at a stated hourly price, and its throughput is per
machine, never per GPU. A device with no wattage gets no tok/s/MW: nothing is invented.

    $/MTok = replica $/hour x 10^6 / (3600 x tok/s)          (the capstone lecture, §5.1)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.config.hardware import CostSpec, CpuHardware, GpuHardware
from harness.config.matrix import Matrix
from harness.config.strict_yaml import DuplicateKeyError, load_yaml
from harness.errors import ConfigError
from harness.metrics.cell_summary import CellSummary
from harness.plan.cells import Cell, Plan, ServerConfig
from harness.result_records import CellResult
from harness.store import Store
from harness.telemetry.power_summary import TelemetrySummary, read_telemetry

SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MTOK = 1_000_000.0
_LECTURE_PRICE = "the capstone lecture §5.2, approximate 2026 cloud rate"
_NO_POWER = "no all-in power figure in the published sources; set cost.watts_all_in"


class DeviceCost(BaseModel):
    """One device class's hourly price and all-in power, with where those figures come from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    usd_per_hour: float = Field(gt=0, description="price of one device for one hour")
    watts_all_in: float | None = Field(default=None, gt=0, description="all-in power per device (cooling, network)")
    unit: str = Field(default="GPU", description="what one device is: 'GPU' or 'CPU machine'")
    source: str = Field(description="where the price and power come from")


DEFAULT_TABLE: dict[str, DeviceCost] = {
    "H100": DeviceCost(usd_per_hour=2.50, source=f"price: {_LECTURE_PRICE}; power: {_NO_POWER}"),
    "H200": DeviceCost(usd_per_hour=3.50, source=f"price: {_LECTURE_PRICE}; power: {_NO_POWER}"),
    "B200": DeviceCost(usd_per_hour=5.50, watts_all_in=2170.0,
                       source=f"price: {_LECTURE_PRICE}; power: InferenceX (B200 FP8, DeepSeek R1), "
                              "5160.2 tok/s/GPU at 2,377,969 tok/s/MW"),
    "B300": DeviceCost(usd_per_hour=7.00, source=f"price: {_LECTURE_PRICE}; power: {_NO_POWER}"),
    "GB200": DeviceCost(usd_per_hour=5.50, watts_all_in=2100.0,
                        source=f"price: {_LECTURE_PRICE}; power: InferenceX (GB200 NVL72 FP4, DeepSeek V4 Pro), "
                               "9478.9 tok/s/GPU at 4,513,744 tok/s/MW"),
    "cpu": DeviceCost(usd_per_hour=0.20, unit="CPU machine",
                      source="price: assumption, a small (2-8 vCPU) on-demand cloud VM; the published sources price "
                             f"no CPU serving; set cost.usd_per_hour to yours; power: {_NO_POWER}"),
}


def usd_per_mtok(replica_usd_per_hour: float, tok_s: float) -> float:
    """$ per million tokens of a replica costing ``replica_usd_per_hour`` that serves ``tok_s`` tokens/s."""
    if tok_s <= 0:
        raise ValueError("throughput must be positive")
    return replica_usd_per_hour * TOKENS_PER_MTOK / (SECONDS_PER_HOUR * tok_s)


def tok_s_for(replica_usd_per_hour: float, target_usd_per_mtok: float) -> float:
    """The throughput a replica must serve to cost ``target_usd_per_mtok`` (the reverse of ``usd_per_mtok``)."""
    if target_usd_per_mtok <= 0:
        raise ValueError("$/MTok must be positive")
    return replica_usd_per_hour * TOKENS_PER_MTOK / (SECONDS_PER_HOUR * target_usd_per_mtok)


def replica_usd_per_hour_for(tok_s: float, target_usd_per_mtok: float) -> float:
    """The most a replica serving ``tok_s`` may cost per hour to hit ``target_usd_per_mtok``."""
    return target_usd_per_mtok * SECONDS_PER_HOUR * tok_s / TOKENS_PER_MTOK


@dataclass(frozen=True, slots=True)
class WorkedExample:
    """The capstone lecture's worked example (§5.2): a published figure that ``harness cost`` reproduces."""

    gpus: int = 16
    usd_per_gpu_hour: float = 5.50
    tok_s: float = 13_000.0
    lecture_replica_usd_per_hour: float = 90.0
    """The lecture rounds 16 x $5.50 = $88 to $90 before dividing."""
    lecture_usd_per_mtok: float = 1.92

    @property
    def usd_per_mtok(self) -> float:
        return usd_per_mtok(self.gpus * self.usd_per_gpu_hour, self.tok_s)


LECTURE_EXAMPLE = WorkedExample()


@dataclass(frozen=True, slots=True)
class WhatIf:
    """A solved what-if: replica price, throughput and $/MTok, with what was given and what was solved for."""

    replica_usd_per_hour: float
    tok_s: float
    usd_per_mtok: float
    solved: str

    def describe(self, devices: int) -> str:
        """The what-if as the command line prints it, the solved figure marked."""
        mark = {self.solved: "   <- solved"}
        return "\n".join([
            f"replica:    {devices} x ${self.replica_usd_per_hour / devices:,.2f}/GPU-hour = "
            f"${self.replica_usd_per_hour:,.2f}/hour{mark.get('replica_usd_per_hour', '')}",
            f"throughput: {self.tok_s:,.0f} tok/s ({self.tok_s / devices:,.1f} tok/s per GPU){mark.get('tok_s', '')}",
            f"$/MTok:     ${self.usd_per_mtok:,.3f}{mark.get('usd_per_mtok', '')}",
            "formula:    $/MTok = replica $/hour x 10^6 / (3600 x tok/s)"])


def solve_what_if(replica_usd_per_hour: float | None, tok_s: float | None, target_usd_per_mtok: float | None
                  ) -> WhatIf:
    """Given exactly two of replica $/hour, tok/s and $/MTok, the third; ValueError otherwise."""
    given = sum(v is not None for v in (replica_usd_per_hour, tok_s, target_usd_per_mtok))
    if given != 2:
        raise ValueError("give exactly two of: a price (--usd-per-gpu-hour / --gpu / --replica-usd-per-hour), "
                         "--tok-s, --usd-per-mtok")
    if target_usd_per_mtok is None:
        assert replica_usd_per_hour is not None and tok_s is not None
        return WhatIf(replica_usd_per_hour, tok_s, usd_per_mtok(replica_usd_per_hour, tok_s), "usd_per_mtok")
    if tok_s is None:
        assert replica_usd_per_hour is not None
        return WhatIf(replica_usd_per_hour, tok_s_for(replica_usd_per_hour, target_usd_per_mtok), target_usd_per_mtok,
                      "tok_s")
    return WhatIf(replica_usd_per_hour_for(tok_s, target_usd_per_mtok), tok_s, target_usd_per_mtok,
                  "replica_usd_per_hour")


def load_price_table(spec: CostSpec, base_dir: Path) -> dict[str, DeviceCost]:
    """The built-in table with ``cost.file`` merged over it (device names are matched case-insensitively)."""
    table = dict(DEFAULT_TABLE)
    if spec.file is None:
        return table
    path = Path(spec.file) if Path(spec.file).is_absolute() else base_dir / spec.file
    try:
        raw = load_yaml(path.read_text())
        overrides = {str(name): DeviceCost.model_validate(entry) for name, entry in (raw or {}).items()}
    except FileNotFoundError as exc:
        raise ConfigError(str(path), "", "no such price table", "fix cost.file in the matrix") from exc
    except (yaml.YAMLError, DuplicateKeyError, ValidationError, AttributeError) as exc:
        raise ConfigError(str(path), "", f"not a price table: {exc}",
                          "write 'B200: {usd_per_hour: 5.5, watts_all_in: 2170, source: ...}' per device") from exc
    for name, entry in overrides.items():
        table = {k: v for k, v in table.items() if k.lower() != name.lower()}
        table[name] = entry
    return table


def _cpu_device(hardware: CpuHardware) -> tuple[str, int]:
    return "cpu", 1


def _gpu_device(hardware: GpuHardware) -> tuple[str, int]:
    return hardware.gpu, hardware.gpus_per_replica


# hardware kind -> (device class in the table, devices one replica occupies)
_DEVICES: dict[str, Callable[..., tuple[str, int]]] = {"cpu": _cpu_device, "gpu": _gpu_device}


@dataclass(frozen=True, slots=True)
class ReplicaPrice:
    """What one replica of the matrix's hardware is priced at: the resolved inputs of every cell's cost."""

    device: str
    unit: str
    devices: int
    usd_per_device_hour: float | None
    watts_per_device: float | None
    source: str

    @property
    def usd_per_hour(self) -> float | None:
        return self.usd_per_device_hour * self.devices if self.usd_per_device_hour is not None else None

    def for_server(self, server: ServerConfig) -> ReplicaPrice:
        """The price of the server's whole deployment: every replica's GPUs, or every prefill and decode server's.
        On a CPU every part shares the one machine, which is what is priced."""
        parts = server.topology.parts
        if parts == 1 or isinstance(server.hardware, CpuHardware):
            return self
        return dataclasses.replace(self, devices=self.devices * parts)


def replica_price(matrix: Matrix, table: Mapping[str, DeviceCost]) -> ReplicaPrice:
    """The matrix's hardware looked up in the table, with the matrix's own overrides applied last."""
    device, devices = _DEVICES[matrix.hardware.kind](matrix.hardware)
    entry = next((v for k, v in table.items() if k.lower() == device.lower()), None)
    spec = matrix.cost
    usd = spec.usd_per_hour or (entry.usd_per_hour if entry else None)
    watts = spec.watts_all_in or (entry.watts_all_in if entry else None)
    if spec.usd_per_hour or spec.watts_all_in:
        source = f"matrix cost section: {spec.source or 'no source given'}"
        if entry and not (spec.usd_per_hour and spec.watts_all_in):
            source += f"; otherwise table: {entry.source}"
    else:
        source = entry.source if entry else f"no price for {device!r}; set cost.usd_per_hour in the matrix"
    unit = entry.unit if entry else ("CPU machine" if matrix.hardware.kind == "cpu" else "GPU")
    return ReplicaPrice(device=device, unit=unit, devices=devices, usd_per_device_hour=usd,
                        watts_per_device=watts, source=source)


@dataclass(frozen=True, slots=True)
class CellCost:
    """A measured cell's throughput priced with its replica's inputs."""

    price: ReplicaPrice
    output_tok_s: float
    total_tok_s: float
    measured_watts: float | None
    """Mean all-in power per device measured during the cell (NVML), when the cell has telemetry."""

    @property
    def watts_per_device(self) -> float | None:
        return self.measured_watts if self.measured_watts is not None else self.price.watts_per_device

    @property
    def power_source(self) -> str:
        if self.measured_watts is not None:
            return "measured (NVML)"
        return "table" if self.price.watts_per_device is not None else "not available"

    @property
    def tok_s_per_device(self) -> float:
        return self.output_tok_s / self.price.devices

    @property
    def usd_per_mtok_output(self) -> float | None:
        usd = self.price.usd_per_hour
        return usd_per_mtok(usd, self.output_tok_s) if usd is not None and self.output_tok_s > 0 else None

    @property
    def usd_per_mtok_total(self) -> float | None:
        usd = self.price.usd_per_hour
        return usd_per_mtok(usd, self.total_tok_s) if usd is not None and self.total_tok_s > 0 else None

    @property
    def tok_s_per_mw(self) -> float | None:
        watts = self.watts_per_device
        return self.tok_s_per_device / watts * 1e6 if watts else None


def measured_watts(telemetry: TelemetrySummary | None) -> float | None:
    """Mean measured power per device from a cell's telemetry, or None where there was none (e.g. no GPU)."""
    value = telemetry.power_w_per_device_mean if telemetry is not None else None
    return value if value is not None and value > 0 else None


@dataclass(frozen=True, slots=True)
class PricedCell:
    """A cell of the plan with its stored result and, when it was measured, its cost."""

    cell: Cell
    result: CellResult | None
    cost: CellCost | None

    @property
    def summary(self) -> CellSummary | None:
        return self.result.summary if self.result is not None and self.result.status == "ok" else None

    @property
    def status(self) -> str:
        return "not run" if self.result is None else self.result.status


def price_cell(summary: CellSummary, price: ReplicaPrice, watts: float | None = None) -> CellCost:
    return CellCost(price=price, output_tok_s=summary.output_throughput, total_tok_s=summary.total_token_throughput,
                    measured_watts=watts)


def price_cells(plan: Plan, store: Store, price: ReplicaPrice) -> list[PricedCell]:
    """Every cell of the plan in plan order; failed and unrun cells carry no cost."""
    rows = []
    for cell in plan.cells:
        result = store.read_result(cell)
        summary = result.summary if result is not None and result.status == "ok" else None
        watts = measured_watts(read_telemetry(store.telemetry_path(cell)))
        cost = price_cell(summary, price.for_server(cell.server), watts) if summary is not None else None
        rows.append(PricedCell(cell=cell, result=result, cost=cost))
    return rows
