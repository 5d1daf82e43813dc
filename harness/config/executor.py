"""Where server groups run (``executor:``): on this machine one after another (``local``, the default), or as
Slurm jobs (``slurm``), one job per server group, with the resources a replica of the group's parallelism needs.

The executor is plumbing, not part of what is measured: it stays out of server and cell ids, so a matrix measured
locally and the same matrix measured on a cluster name the same cells. Everything here is validated when the
matrix loads; whether the cluster can hold the jobs is checked against the cluster itself before anything is
submitted (``harness.cluster.jobs``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.config.open_union import OpenUnion


class ExecutorBase(BaseModel):
    """What every executor's settings share: strict, frozen, told apart by ``kind``. A kind subclasses it with
    ``kind: Literal["name"] = "name"`` and registers the subclass (``register_executor_model``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(description="which executor; each kind's model narrows it to its own tag")


_KINDS: OpenUnion[ExecutorBase] = OpenUnion("kind")
register_executor_model = _KINDS.register
"""Class decorator: make an ``ExecutorBase`` subclass the settings of its ``kind`` (what runs that kind's rounds is
the entry of that name in ``harness.pipeline.executors.EXECUTORS``); a kind already taken is refused."""


def executor_models() -> dict[str, type[ExecutorBase]]:
    """Each executor kind's settings model, by the ``executor.kind`` a matrix writes, the built-ins first."""
    return {model.model_fields["kind"].default: model for model in _KINDS.variants()}


@register_executor_model
class LocalExecutor(ExecutorBase):
    """Server groups run here, one after another, as child processes of the harness (today's behaviour)."""

    kind: Literal["local"] = "local"
    start_ahead: bool = Field(
        False, description="start the next server group's server while this group's starts, freeze it once ready "
                           "(SIGSTOP) and thaw it when its turn comes: the two start-ups overlap, and no cell is "
                           "measured while another server starts or runs (harness.pipeline.start_ahead). Off by "
                           "default until measured neutral: in an A/B of three rounds the first server measured the "
                           "same, the thawed one once with 28-41% less throughput (docs/studies/timings.md)")


@register_executor_model
class SlurmExecutor(ExecutorBase):
    """One Slurm job per server group, submitted with submitit; same-shaped groups go out as one job array."""

    kind: Literal["slurm"] = "slurm"
    partition: str | None = Field(None, description="partition (sbatch --partition); default: the cluster's")
    account: str | None = Field(None, description="account to charge (sbatch --account)")
    qos: str | None = Field(None, description="quality of service (sbatch --qos)")
    time_limit_min: int = Field(60, gt=0, description="wall-clock limit of one server group's job, minutes")
    gpus_per_node: int | None = Field(
        None, gt=0, description="GPUs one node holds; a replica spans ceil(tp x dp / gpus_per_node) nodes. On CPU "
                                "hardware: the engine ranks one node runs (default: the whole replica on one node)")
    cpus_per_task: int | None = Field(None, gt=0, description="CPUs of the job on each node (sbatch --cpus-per-task)")
    mem: str | None = Field(None, pattern=r"^\d+[KMGT]?$", description="memory per node (sbatch --mem), e.g. 200G")
    container_image: str | None = Field(None, description="pyxis --container-image for every engine process (an "
                                        "enroot .sqsh path or an image reference); needs the pyxis plugin")
    container_mounts: tuple[str, ...] = Field((), description="pyxis --container-mounts, SRC:DST each")
    sbatch_args: dict[str, str] = Field(default_factory=dict, description="further sbatch options, name -> value "
                                        "without the leading dashes (e.g. constraint: h100)")
    srun_args: tuple[str, ...] = Field((), description="further srun options for every engine process")
    max_parallel: int = Field(8, gt=0, description="server groups that may run at once (the array's % cap)")
    python: str | None = Field(None, description="interpreter on the nodes that runs the harness's job driver; "
                               "default: this one (the checkout must be on a filesystem the nodes share)")
    folder: str | None = Field(None, description="where submitit keeps job scripts, pickles and logs; default: "
                               "reports/<matrix>/slurm (on the shared filesystem)")
    poll_s: float = Field(2.0, gt=0, le=60, description="how often the controller looks at the queue and results")

    @field_validator("sbatch_args")
    @classmethod
    def _no_dashes(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if name.startswith("-"):
                raise ValueError(f"sbatch_args key {name!r}: write the option without dashes, e.g. "
                                 f"{name.lstrip('-')!r}")
            if name in _MANAGED:
                raise ValueError(f"sbatch_args key {name!r} is set by the executor itself; use the executor's own "
                                 f"key ({_MANAGED[name]})")
        return value


_MANAGED = {"nodes": "gpus_per_node and axes.parallel", "partition": "partition", "account": "account",
            "time": "time_limit_min", "gpus-per-node": "gpus_per_node", "cpus-per-task": "cpus_per_task",
            "mem": "mem", "array": "max_parallel", "qos": "qos"}


Executor = Annotated[ExecutorBase, _KINDS]
"""An executor as a matrix writes it: validated by the model registered for its ``kind``."""
