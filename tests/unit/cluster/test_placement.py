"""Where a launch's engine processes run in a job: every other node's process is an srun step."""

from __future__ import annotations

from harness.cluster import Placement
from harness.servers import LaunchSpec


def test_a_step_on_another_node_is_an_srun_argv() -> None:
    placement = Placement(job_id="42", nodes=("n1", "n2"), head_addr="10.0.0.1", container_image="/img.sqsh",
                          container_mounts=("/m:/models",), srun_args=("--mpi=none",))
    step = placement.srun("n2", LaunchSpec(argv=("python", "-m", "vllm"), env={"A": "1"}))
    assert step.argv[:6] == ("srun", "--overlap", "--jobid=42", "--nodes=1", "--ntasks=1", "--nodelist=n2")
    assert "--container-image=/img.sqsh" in step.argv and "--container-mounts=/m:/models" in step.argv
    assert step.argv[-4:] == ("--mpi=none", "python", "-m", "vllm") and step.env == {"A": "1"}
