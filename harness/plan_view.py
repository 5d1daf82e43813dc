"""A plan as text for ``harness plan``: servers (launches), the cells each serves, and the totals."""

from __future__ import annotations

from harness.plan import Plan


def render_plan(plan: Plan) -> str:
    matrix = plan.matrix
    lines = [f"matrix {matrix.name}: {len(plan.cells)} cells on {len(plan.groups)} server launches"
             f" (hardware: {matrix.hardware.kind})", ""]
    for index, group in enumerate(plan.groups, 1):
        server = group.server
        lines.append(f"server {index} [{server.server_id}] {server.label}  ({len(group.cells)} cells)")
        for cell in group.cells:
            requests = cell.workload.requests_for(cell.concurrency)
            lines.append(f"  cell {cell.cell_id}  {cell.workload_name} c={cell.concurrency}"
                         f"  ({requests} requests + {cell.workload.warmup_requests} warm-up)")
    lines += ["", f"{len(plan.groups)} launches, {len(plan.cells)} cells; nothing was launched."]
    return "\n".join(lines)
