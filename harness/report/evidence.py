"""The report's evidence, read from the store: parity verdicts, profiles, telemetry, the client's own load and the
cross-check against ``vllm bench serve``. Nothing here is judged again; stored verdicts are shown as stored.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.analysis.cost import PricedCell
from harness.config.evidence_sections import ParitySpec
from harness.crosscheck_result import read_crosscheck
from harness.parity import MULTI_TURN, CellParity, find_cell_parity
from harness.parity.comparison import CategoryDelta, ParityComparison
from harness.plan.cells import Plan
from harness.profiling import engine_profiler, nsys_profile_argv, profiled_runtimes
from harness.profiling.profiled_cells import profiled
from harness.report.formatting import fmt
from harness.report.rows import FidelityRow, fidelity_row
from harness.servers.runtime_lookup import launch_spec
from harness.store import Store
from harness.telemetry import TelemetrySummary, read_telemetry

PROFILE_SUMMARY = "summary.md"
TORCH_CAPTURE = "torch profiler"
"""How a CPU capture's summary names itself: on a GPU the same window is captured by Nsight Systems."""


@dataclass(frozen=True, slots=True)
class ParityRow:
    """One decoding of one judged server against the reference, as the parity table shows it."""

    server: str
    decoding: str
    comparison: ParityComparison
    ci_pp: tuple[float, float] | None
    """The bootstrap 95% interval of Δ, in points; None when it was not computed."""
    per_token_ratio: float | None
    """The decoding's median ms per output token over free's on the same items (None: not measured)."""
    verdict: str
    categories: tuple[CategoryDelta | None, ...]
    """Per category of the matrix's parity suite, in its order; None where the category did not run."""


def _verdict(judged: ParityComparison | CellParity) -> str:
    if judged.passed is None:
        return "not judged"
    if not judged.passed:
        return "fail"
    # A pass whose sample could not have seen a drop is not a finding (``parity.min_power``).
    return "pass" if judged.conclusive else "inconclusive"


def parity_by_server(plan: Plan, store: Store) -> list[tuple[str, CellParity]]:
    """Each judged server's parity (stored identically in every cell of the server), in plan order."""
    found = []
    for group in plan.groups:
        verdict = next((v for c in group.cells if (v := find_cell_parity(store.parity_verdict_path(c)))), None)
        if verdict is not None:
            found.append((group.server.label, verdict))
    return found


def parity_rows(servers: Sequence[tuple[str, CellParity]], spec: ParitySpec | None) -> tuple[ParityRow, ...]:
    categories = spec.categories if spec else ()
    return tuple(
        ParityRow(label, name, c, (c.ci_low_pp, c.ci_high_pp) if c.ci_low_pp is not None and c.ci_high_pp is not None
                  else None, cost.per_token_ratio if (cost := cp.costs.get(name)) else None, _verdict(c),
                  tuple(c.categories.get(cat) for cat in categories))
        for label, cp in servers for name, c in cp.comparisons.items())


@dataclass(frozen=True, slots=True)
class ParityColumn:
    """One column group of the parity table in the capstone lecture's shape: accuracy, Δ against the reference with
    its interval."""

    accuracy: float | None
    delta_pp: float | None
    ci_pp: tuple[float, float] | None
    malformed: float | None
    verdict: str
    rerun: bool = False
    """The comparison is the reference's rerun against its first run, not a cell against the reference."""
    power: float | None = None
    """Its sample's power against a ``power_drop_pp`` drop (what an ``inconclusive`` verdict lacked)."""
    power_drop_pp: float = 5.0
    paired: int = 0
    decoding: str = ""


@dataclass(frozen=True, slots=True)
class ParitySummaryRow:
    """One judged server as the capstone lecture's parity table shows it: single-turn (free), multi-turn, and
    single-turn under grammar-constrained decoding, with what the grammar costs per output token."""

    server: str
    precision: str
    runtime: str
    free: ParityColumn | None
    multi_turn: ParityColumn | None
    grammar: ParityColumn | None
    grammar_per_token_ratio: float | None
    verdict: str


def _column(comparison: ParityComparison | None) -> ParityColumn | None:
    if comparison is None:
        return None
    ci = (comparison.ci_low_pp, comparison.ci_high_pp) if comparison.ci_low_pp is not None \
        and comparison.ci_high_pp is not None else None
    return ParityColumn(comparison.overall_accuracy, comparison.delta_pp, ci, comparison.malformed_rate,
                        _verdict(comparison), comparison.rerun, comparison.power, comparison.power_drop_pp,
                        comparison.paired_items, comparison.decoding)


def parity_summary(plan: Plan, servers: Sequence[tuple[str, CellParity]]) -> tuple[ParitySummaryRow, ...]:
    """One row per judged server, in plan order: the table a reviewer reads before the per-decoding detail."""
    server = {g.server.label: g.server for g in plan.groups}
    grammar = ("required", "json_schema")
    rows = []
    for label, cp in servers:
        constrained = next((d for d in grammar if d in cp.comparisons), None)
        cost = cp.costs.get(constrained) if constrained else None
        config = server.get(label)
        rows.append(ParitySummaryRow(
            label, config.precision.label if config else "", config.runtime if config else "",
            _column(cp.comparisons.get("free")),
            _column(cp.comparisons.get(MULTI_TURN)), _column(cp.comparisons.get(constrained) if constrained else None),
            cost.per_token_ratio if cost else None, _verdict(cp)))
    return tuple(rows)


def parity_rule(servers: Sequence[tuple[str, CellParity]], spec: ParitySpec) -> str:
    """The gate rule as the stored verdicts state it; the matrix's own when no server has one yet."""
    if servers:
        return servers[0][1].rule
    return f"a cell fails when Δ < -{fmt(spec.max_drop_pp)} pp and the exact McNemar p < {spec.alpha}"


def gpu_capture_argv(plan: Plan) -> dict[str, str]:
    """For each profiled cell: the ``nsys profile`` command the same capture runs under on a GPU machine."""
    found = {}
    for cell in profiled(plan.matrix.profile, plan.cells):
        if cell.server.runtime not in profiled_runtimes():
            continue  # the summary says why there is no profile
        argv = [*launch_spec(cell.server, 8000).argv,
                *engine_profiler(cell.server.runtime).server_args("nsys", Path("profiles"))]
        found[cell.cell_id] = shlex.join(nsys_profile_argv(argv, Path("profiles") / plan.matrix.name / cell.cell_id
                                                           / "profile"))
    return found


@dataclass(frozen=True, slots=True)
class ProfileEntry:
    label: str
    path: Path
    files: tuple[str, ...]
    summary: str | None
    gpu_capture: str | None
    """The Nsight Systems command that captures the same window on a GPU, shown beside a CPU (torch) capture."""


def find_profiles(store: Store, plan: Plan) -> list[ProfileEntry]:
    """Profiles captured for this matrix's cells (``profiles/<matrix>/<cell_id>/``), with their summary if any."""
    commands = gpu_capture_argv(plan)
    found = []
    for cell in plan.cells:
        folder = store.profile_dir(cell)
        if folder.is_dir():
            path = folder / PROFILE_SUMMARY
            summary = path.read_text() if path.is_file() else None
            command = commands.get(folder.name) if summary and TORCH_CAPTURE in summary else None
            found.append(ProfileEntry(cell.label, folder, tuple(sorted(p.name for p in folder.iterdir())), summary,
                                      command))
    return found


def cell_telemetry(plan: Plan, store: Store) -> dict[str, TelemetrySummary]:
    """Each cell's stored telemetry (NVML, or the reason there is none), by cell label."""
    return {cell.label: found for cell in plan.cells if (found := read_telemetry(store.telemetry_path(cell)))}


def telemetry_gaps(telemetry: Mapping[str, TelemetrySummary]) -> str:
    """Why no cell has telemetry, each distinct reason once."""
    return "; ".join(dict.fromkeys(str(t.reason) for t in telemetry.values()))


@dataclass(frozen=True, slots=True)
class ClientLoad:
    """The measured cells whose client's own load puts a figure in doubt, with the reason it was flagged."""

    bound: tuple[tuple[str, str], ...]
    """Cells the client may have limited: their throughput may understate the server."""
    starved: tuple[tuple[str, str], ...]
    """Cells measured while the client waited for a core: their latencies are this machine's."""
    fidelity: tuple[FidelityRow, ...]


def client_load(measured: Sequence[PricedCell]) -> ClientLoad:
    summaries = [(r.cell.label, s) for r in measured if (s := r.summary) is not None]
    return ClientLoad(
        bound=tuple((label, str(s.client.reason)) for label, s in summaries if s.client and s.client.bottleneck),
        starved=tuple((label, str(s.client.reason)) for label, s in summaries if s.client and s.client.starved),
        fidelity=tuple(fidelity_row(label, s) for label, s in summaries))


@dataclass(frozen=True, slots=True)
class Crosscheck:
    """The last ``harness crosscheck`` of the matrix: our client and vLLM's against one server."""

    path: Path
    workload: str
    """Kind and token counts, e.g. ``random 128→64``."""
    concurrency: int
    rounds: int
    ratios: Mapping[str, float]
    """Ours / vLLM's, of the medians over rounds."""
    anchors_ours: Mapping[str, float]
    anchors_vllm: Mapping[str, float]
    anchored_ratios: Mapping[str, float]
    """Each client against the server's own histograms; empty for a cross-check stored before they were read."""
    notes: tuple[str, ...]


def find_crosscheck(store: Store) -> Crosscheck | None:
    raw: dict[str, Any] | None = read_crosscheck(store)
    if raw is None:
        return None
    spec, workload = raw["spec"], raw["spec"]["workload"]
    anchored = raw.get("anchored_ratios") or {}
    anchors = raw["anchors"] if anchored else {"ours": {}, "vllm": {}}
    return Crosscheck(store.crosscheck_path, f"{workload['kind']} {workload['input_tokens']}→"
                      f"{workload['output_tokens']}", spec["concurrency"], spec["rounds"], raw["ratios"],
                      anchors["ours"], anchors["vllm"], anchored, tuple(raw["notes"]))


@dataclass(frozen=True, slots=True)
class Evidence:
    """What backs the figures: accuracy parity, profiles, measured power, and how far the client can be trusted."""

    # accuracy parity (stored verdicts, never judged here)
    parity_spec: ParitySpec | None
    """The matrix's parity suite; None when it asks for none."""
    parity_measured: bool
    """Whether some cell has a stored parity verdict."""
    parity_rule: str
    parity_rows: tuple[ParityRow, ...]
    parity_summary: tuple[ParitySummaryRow, ...]
    parity_notes: tuple[tuple[str, str], ...]
    """Servers that did not pass (failed, or could not be judged), with the stored reason."""
    # profiles and power
    profiles: tuple[ProfileEntry, ...]
    telemetry_recorded: bool
    """Whether any cell stored telemetry, even only the reason it has none."""
    telemetry: tuple[tuple[str, TelemetrySummary], ...]
    """The cells with NVML telemetry, by label."""
    telemetry_gaps: str
    # the measurement itself
    client: ClientLoad
    repeats_max: int
    spread_columns: bool
    """Whether some cell ran more than once, so the fidelity table shows the spread across repeats."""
    crosscheck: Crosscheck | None


def gather_evidence(plan: Plan, store: Store, rows: Sequence[PricedCell], parity_measured: bool) -> Evidence:
    spec = plan.matrix.parity
    servers = parity_by_server(plan, store)
    telemetry = cell_telemetry(plan, store)
    measured = [r for r in rows if r.summary is not None]
    repeats_max = max((len(r.summary.repeats) for r in measured if r.summary is not None), default=0)
    return Evidence(
        parity_spec=spec, parity_measured=parity_measured, parity_rule=parity_rule(servers, spec) if spec else "",
        parity_rows=parity_rows(servers, spec), parity_summary=parity_summary(plan, servers),
        parity_notes=tuple((label, cp.reason) for label, cp in servers if not (cp.passed and cp.conclusive)),
        profiles=tuple(find_profiles(store, plan)), telemetry_recorded=bool(telemetry),
        telemetry=tuple((label, t) for label, t in telemetry.items() if t.available),
        telemetry_gaps=telemetry_gaps(telemetry), client=client_load(measured), repeats_max=repeats_max,
        spread_columns=repeats_max > 1, crosscheck=find_crosscheck(store))
