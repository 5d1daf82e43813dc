"""How much the Slurm executor costs per server group: 100 groups of the fake server through a real 2-node Slurm
cluster on this machine (4 fake GPUs per node, one GPU per group), capped at the cluster's 8 GPUs.

Reported, from the run's own ``slurm/jobs.json`` timings (each job's driver start and end, the controller's
submission and the moment it saw the result):

* the scheduling span (first submission to the last result seen) against ideal packing: every group's own run
  time (driver start to end) laid on the cluster's slots with no gap, ``max(sum(own) / slots, longest own)``;
* the overhead per group: slot-seconds the span used beyond the groups' own run times, per group,
  ``(span x slots - sum(own)) / groups`` (Slurm's dispatch, the interpreter and the harness's import in each job,
  the controller's polling and submission);
* the command's whole wall time, whose remainder over the span is the controller's fixed cost (loading the plan,
  rendering the report);
* how long after a job finished the controller noticed (``collected - finished``).

Run: ``.venv/bin/python docs/slurm/slurm_scale.py [--groups 100] [--slots 8]`` (as root; about 3 minutes).
A benchmark, not a timed test: the figures depend on the machine, and 2 cores bound every job's start.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers

from harness.cluster.local import local_cluster

MATRIX = """name: scale
hardware: {{kind: gpu, gpu: H100, gpus_per_replica: 1}}
models:
{models}
workloads:
  w: {{kind: random, input_tokens: 8, output_tokens: 4, num_requests: 2, warmup_requests: 0}}
axes:
  runtime: [fake]
server: {{startup_timeout_s: 120}}
executor: {{kind: slurm, gpus_per_node: 1, max_parallel: {slots}, poll_s: 0.5}}
"""


def tokenizer_dir(root: Path) -> Path:
    vocab = {"<unk>": 0, **{f"w{i}": i + 1 for i in range(255)}}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    path = root / "tiny-model"
    path.mkdir()
    tokenizer.save(str(path / "tokenizer.json"))
    return path


def _epoch(stamp: str) -> float:
    from datetime import datetime

    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S").timestamp()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--slots", type=int, default=8, help="GPUs of the local cluster the groups share")
    parser.add_argument("--out", type=Path, default=Path("build/slurm-scale.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="slurm-scale-") as tmp:
        root = Path(tmp)
        model = tokenizer_dir(root)
        names = "\n".join(f"  m{i:03d}: {{id: \"{model}\"}}" for i in range(args.groups))
        matrix = root / "scale.yaml"
        matrix.write_text(MATRIX.format(models=names, slots=args.slots))
        with local_cluster(root / "cluster", nodes=2, gpus=args.slots // 2):
            started = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "harness", "run", str(matrix), "--out", str(root / "out")],
                                  capture_output=True, text=True, env=None)
            wall = time.monotonic() - started
            # Slurm's own start and end of each job (whole seconds; kept MinJobAge after they end)
            slurm = subprocess.run(["scontrol", "-o", "show", "job"], capture_output=True, text=True).stdout
        if done.returncode != 0:
            sys.exit(f"the run failed ({done.returncode}):\n{done.stderr[-3000:]}")
        timing = json.loads((root / "out" / "scale" / "slurm" / "jobs.json").read_text())["timing"]
    own = [t["finished"] - t["started"] for t in timing.values()]
    starts = {}
    for line in slurm.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if fields.get("ArrayTaskId", "").isdigit():
            key = f"{fields['ArrayJobId']}_{fields['ArrayTaskId']}"
            starts[key] = (_epoch(fields["StartTime"]), _epoch(fields["EndTime"]))
    startup = [t["started"] - starts[j][0] for j, t in timing.items() if j in starts]
    teardown = [starts[j][1] - t["finished"] for j, t in timing.items() if j in starts]
    notice = [t["collected"] - t["finished"] for t in timing.values()]
    span = max(t["collected"] for t in timing.values()) - min(t["submitted"] for t in timing.values())
    ideal = max(sum(own) / args.slots, max(own))
    result = {
        "groups": len(own), "slots": args.slots, "span_s": round(span, 1), "ideal_s": round(ideal, 1),
        "span_over_ideal": round(span / ideal, 3),
        "overhead_per_group_s": round((span * args.slots - sum(own)) / len(own), 2),
        "command_wall_s": round(wall, 1), "controller_fixed_s": round(wall - span, 1),
        "own_s": {"median": round(statistics.median(own), 2), "max": round(max(own), 2)},
        "notice_s": {"median": round(statistics.median(notice), 2), "max": round(max(notice), 2)},
        # Slurm's StartTime to the driver's first line (interpreter, submitit, unpickling the group), and the
        # driver's return to Slurm's EndTime (pickling the result, the batch step's end); whole-second clock
        "job_startup_s": {"mean": round(statistics.mean(startup), 2)} if startup else None,
        "job_teardown_s": {"mean": round(statistics.mean(teardown), 2)} if teardown else None,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
