"""``lock/<matrix>.baseline.json``: every gated figure of every cell, one value per server launch, with the
machine-speed probe of each launch and the provenance of the runs it came from, for each machine it was measured on.

A baseline is what a later run is judged against, so it must carry its own noise: the gate refuses one with fewer
than ``MIN_LAUNCHES`` launches of some configuration (promote a run made with ``--launches 3``, or add runs to it
with ``harness baseline --add-repeat``). A baseline of another matrix is refused too.

Timings from another machine say nothing about this one, and CI runners differ (this project's have been AMD EPYC and
Intel Xeon), so the file keeps one baseline per machine (``BaselineFile.machines``, keyed by the hardware
fingerprint), and promoting on a machine replaces only that machine's entry. On a machine the file does not hold,
the gate still judges what does not depend on the machine (errors, failed cells: exact checks) against another
machine's entry and leaves every other figure inconclusive; ``--strict`` refuses instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.errors import HarnessError, StoredFileError
from harness.host import HardwareInfo
from harness.metrics.gateable import GATEABLE, gated_metric
from harness.plan.cells import Plan
from harness.store import Store, now_iso, write_atomic
from harness.stored_files import read_stored_text
from harness.verdict.lock import Lock

MIN_LAUNCHES = 3
"""Launches per configuration a baseline needs before it can judge: fewer cannot estimate the launch noise."""


class GateError(HarnessError):
    """The gate cannot compare: no baseline, an unreadable one, one of another matrix or machine, or too few
    launches in it."""


class BaselineCell(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    status: Literal["ok", "failed"]
    values: dict[str, list[float | None]]
    """Gateable metric -> one value per server launch."""
    machine_s: list[float | None]
    """The machine-speed probe's seconds around each launch (None where none ran), parallel to ``values``."""

    @property
    def launches(self) -> int:
        return len(self.machine_s)


class Baseline(BaseModel):
    """The baseline of one machine."""

    model_config = ConfigDict(extra="forbid")

    matrix: str
    matrix_sha256: str
    harness_version: str
    harness_commit: str | None
    hardware: HardwareInfo
    created_at: str
    runs: int
    """Runs promoted into this baseline (each may hold several launches of a cell)."""
    cells: dict[str, BaselineCell]

    @property
    def launches(self) -> int:
        """The fewest launches any measured configuration holds: what the gate's confidence rests on."""
        return min((c.launches for c in self.cells.values() if c.status == "ok"), default=0)


class BaselineFile(BaseModel):
    """What ``lock/<matrix>.baseline.json`` holds: the matrix's baseline on each machine it was promoted on."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[3] = 3
    matrix: str
    machines: list[Baseline]
    """One per hardware fingerprint, in the order they were first promoted."""

    def of(self, fingerprint: str) -> Baseline | None:
        return next((b for b in self.machines if b.hardware.fingerprint == fingerprint), None)

    def put(self, baseline: Baseline) -> BaselineFile:
        """This file with ``baseline`` as its machine's entry (replacing that machine's, keeping the others)."""
        if self.matrix != baseline.matrix:
            return BaselineFile(matrix=baseline.matrix, machines=[baseline])
        here = baseline.hardware.fingerprint
        machines = [baseline if b.hardware.fingerprint == here else b for b in self.machines]
        if self.of(here) is None:
            machines.append(baseline)
        return BaselineFile(matrix=baseline.matrix, machines=machines)


def _upgraded(raw: Any) -> Any:
    """A schema-2 file (one machine, before baselines were kept per machine) as a one-machine file."""
    if isinstance(raw, dict) and raw.get("schema_version") == 2:
        one = {k: v for k, v in raw.items() if k != "schema_version"}
        return {"schema_version": 3, "matrix": one.get("matrix"), "machines": [one]}
    return raw


def read_baseline(path: Path) -> BaselineFile:
    try:
        text = read_stored_text(path)
    except StoredFileError as exc:
        raise GateError(f"{exc}\n  fix: restore it from git (git checkout -- {path}), or re-promote it with "
                        "`harness baseline MATRIX` from a run made with `--launches 3`") from exc
    if text is None:
        raise GateError(f"no baseline at {path}: fix: promote a run made with three or more launches "
                        "(`harness run MATRIX --launches 3`, then `harness baseline MATRIX`) and commit it")
    try:
        return BaselineFile.model_validate(_upgraded(json.loads(text)))
    except json.JSONDecodeError as exc:
        raise GateError(f"{path} is not a baseline of this harness (not JSON: {exc}); fix: re-promote it with "
                        "`harness baseline MATRIX` from a run made with `--launches 3`") from exc
    except ValidationError as exc:
        raise GateError(f"{path} is not a baseline of this harness ({exc.error_count()} problems, e.g. "
                        f"{exc.errors()[0]['loc']}); fix: re-promote it with `harness baseline MATRIX` from a run "
                        "made with `--launches 3`") from exc


def provenance_differences(baseline: Baseline, matrix_name: str, lock: Lock) -> list[str]:
    """What differs between the baseline's run and this one (empty: same matrix, harness and machine)."""
    checks = (("matrix", baseline.matrix, matrix_name),
              ("matrix contents (sha256)", baseline.matrix_sha256[:12], lock.matrix_sha256[:12]),
              ("harness version", baseline.harness_version, lock.harness.version),
              ("machine", baseline.hardware.fingerprint, lock.hardware.fingerprint))
    return [f"{what}: baseline {old}, now {new}" for what, old, new in checks if old != new]


def _same_matrix(matrix: str, path: Path | str, plan: Plan) -> None:
    if matrix != plan.matrix.name:
        raise GateError(f"{path} is the baseline of matrix {matrix!r}, not {plan.matrix.name!r}; fix: point "
                        f"gates.baseline (or --baseline) at lock/{plan.matrix.name}.baseline.json")


def choose(file: BaselineFile, path: Path | str, plan: Plan, lock: Lock, strict: bool) -> tuple[Baseline, bool]:
    """This machine's baseline, and False; without it, another machine's (the one with the most launches) and True:
    the gate then judges only what does not depend on the machine. ``strict`` refuses instead (GateError), as does a
    file of another matrix."""
    _same_matrix(file.matrix, path, plan)
    here = lock.hardware.fingerprint
    own = file.of(here)
    if own is not None:
        return own, False
    if strict or not file.machines:
        held = "; ".join(b.hardware.fingerprint for b in file.machines) or "no machine"
        raise GateError(f"{path} was measured on {held}, this machine is {here}: timings of another machine cannot "
                        "gate this one; fix: promote a baseline here (`harness run MATRIX --launches 3`, then "
                        "`harness baseline MATRIX`: it adds this machine beside the others)")
    return max(file.machines, key=lambda b: (b.launches, b.created_at)), True


def refuse(baseline: Baseline, path: Path | str, plan: Plan, lock: Lock, strict: bool) -> list[str]:
    """Raise GateError (naming the file and the fix) for a baseline that cannot judge this run; return what
    differs but may be compared (matrix contents, harness version: what a regression check is for; the machine, when
    the gate judges only its exact checks)."""
    _same_matrix(baseline.matrix, path, plan)
    if baseline.launches < MIN_LAUNCHES:
        raise GateError(f"{path} holds {baseline.launches} launch(es) of some configuration; the gate needs at least "
                        f"{MIN_LAUNCHES} to know the launch-to-launch noise; fix: `harness run MATRIX --launches "
                        f"{MIN_LAUNCHES} --force` then `harness baseline MATRIX`, or add runs with "
                        "`harness baseline MATRIX --add-repeat`")
    differences = provenance_differences(baseline, plan.matrix.name, lock)
    if strict and differences:
        raise GateError(f"{path} refused (--strict): " + "; ".join(differences))
    return differences


def promote(plan: Plan, store: Store, lock: Lock, previous: Baseline | None = None) -> Baseline:
    """A baseline from the stored run; with ``previous``, the run's launches are added to the cells it holds."""
    if previous is not None:
        refused = [d for d in provenance_differences(previous, plan.matrix.name, lock) if d.startswith("ma")]
        if refused:
            raise GateError("cannot add this run to a baseline of another matrix or machine: " + "; ".join(refused))
    cells = dict(previous.cells) if previous else {}  # cells this run did not reach keep their launches
    for cell in plan.cells:
        if previous is not None and cell.cell_id not in previous.cells:
            # the matrix is the same (checked above), so this is a probe a search visited anew: added with this
            # run's launches only, it would lower the baseline's launch count below what the gate needs
            continue
        result = store.read_result(cell)
        if result is None:
            continue
        before = previous.cells.get(cell.cell_id) if previous else None
        if result.status == "ok" and result.summary is not None:
            values = {name: gated_metric(name).launch_values(result.summary) for name in GATEABLE}
            launches = len(values[GATEABLE[0]])
            machine = [*result.machine_s, *[None] * launches][:launches]
        else:
            values, machine = {name: [None] for name in GATEABLE}, [None]
        status: Literal["ok", "failed"] = \
            "ok" if result.status == "ok" and (before is None or before.status == "ok") else "failed"
        if before is not None:
            values = {name: [*before.values.get(name, [None] * before.launches), *v] for name, v in values.items()}
            machine = [*before.machine_s, *machine]
        cells[cell.cell_id] = BaselineCell(label=cell.label, status=status, values=values, machine_s=machine)
    if not cells:
        raise GateError(f"no results under {store.dir}: run the matrix before promoting it")
    return Baseline(matrix=plan.matrix.name, matrix_sha256=lock.matrix_sha256, harness_version=lock.harness.version,
                    harness_commit=lock.harness.commit, hardware=lock.hardware, created_at=now_iso(),
                    runs=(previous.runs + 1) if previous else 1, cells=cells)


def write_baseline(baseline: Baseline, path: Path) -> Path:
    """Write ``baseline`` as its machine's entry of the file at ``path``, keeping the other machines' entries (a file
    of another matrix, or one this harness cannot read, is replaced: promoting is the fix its error names)."""
    try:
        file = read_baseline(path).put(baseline)
    except GateError:
        file = BaselineFile(matrix=baseline.matrix, machines=[baseline])
    write_atomic(path, file.model_dump_json(indent=2) + "\n")
    return path
