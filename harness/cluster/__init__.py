"""Slurm as the harness needs it: the resources of a server group's job (``shape``), where a launch's processes
run inside a job (``placement``), the queue read and written as argv lists (``queue``), and a real Slurm cluster
on this machine for ``make bench-slurm`` and the tests (``local``). Submission itself is submitit's
(``harness.pipeline.slurm_rounds``)."""
