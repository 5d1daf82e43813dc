"""Before a run measures its first cell: the deployments' access granted for the run, and what each deployment's
server says about itself read, stored and checked against its declaration.

The grant (``harness.endpoint_access``) holds for the whole run and ends with it, so no request after the run carries
the key. A deployment that refuses the key (401/403) stops the run here, before any measurement, with its name and the
variable to check; one that does not answer is stored as unreachable, and its cells fail as data while the rest of
the matrix runs. A contradiction between the declaration and the server's word is a warning now and a line in the
report.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Generator

from harness.endpoint_access import granted
from harness.errors import DeploymentRefused
from harness.plan import Plan
from harness.servers import SelfDescription, deployment_grants, describe
from harness.store import Store, write_atomic

log = logging.getLogger(__name__)


@contextlib.contextmanager
def deployment_access(plan: Plan, source: str = "matrix") -> Generator[None]:
    """The plan's deployments reachable with their keys, TLS settings and politeness while the block runs."""
    with granted(deployment_grants((g.server for g in plan.groups), source)):
        yield


async def describe_deployments(plan: Plan, store: Store | None = None) -> list[SelfDescription]:
    """Each deployment's self-description (inside ``deployment_access``), stored with the run when ``store`` is
    given; contradictions logged as warnings. ``DeploymentRefused`` propagates: the run must not start."""
    described = []
    for group in plan.groups:
        if not group.server.is_deployment:
            continue
        said = await describe(group.server)
        if store is not None and group.server.deployment_name is not None:
            write_atomic(store.deployment_path(group.server.deployment_name), said.model_dump_json(indent=1))
        if not said.reachable:
            log.warning("deployment %s at %s does not answer: %s", said.deployment, said.base_url, said.problem)
        for line in said.warnings():
            log.warning("%s", line)
        described.append(said)
    return described


async def read_deployments(plan: Plan, source: str = "matrix") -> dict[str, SelfDescription | str]:
    """What ``harness plan`` shows of each deployment: its self-description, or why it could not be read (a refused
    key is shown, not raised: the plan launches nothing and sends no inference request)."""
    found: dict[str, SelfDescription | str] = {}
    with deployment_access(plan, source):
        for group in plan.groups:
            name = group.server.deployment_name
            if name is None:
                continue
            try:
                found[name] = await describe(group.server, timeout_s=5.0)
            except DeploymentRefused as exc:
                found[name] = str(exc)
    return found
