"""``harness regress --against REV`` on the fake engine: the worktree, the balanced paired rounds, the sequential
stop, the planted change read as regressed, and the escalation of a doubtful quick check.

Launches: the fake engine only, as real processes: each side of each round is a ``harness run`` child process (the
reference's from its worktree), about 3 s each.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import cli
from tests.support.paired_repo import git, paired_repo
from tests.support.processes import live_pids

pytestmark = pytest.mark.fake_engine

MATRIX = """
name: m
models:
  m: {{id: "{model}"}}
workloads:
  w: {{kind: random, input_tokens: 16, output_tokens: 12, num_requests: 6, warmup_requests: 1}}
axes:
  runtime: [fake]
  concurrency: [1, 2]
server: {{startup_timeout_s: 60}}
runtimes: {{fake: {{extra_args: [--itl-ms, "{itl}", --ttft-ms, "20"]}}}}
predict: {{predictor: none}}
gates: {{metrics: [output_throughput, tpot_ms.median, error_rate]}}
"""


def regress(repo: Path, matrix: Path, out: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return cli.harness("regress", matrix, "--repo", repo, "--out", out, "--seed", "3", *args)


def paired(out: Path) -> dict:  # type: ignore[type-arg]
    found = list(out.glob("m/paired/*/paired.json"))
    assert len(found) == 1
    return json.loads(found[0].read_text())  # type: ignore[no-any-return]


def test_a_against_a_settles_ok_and_a_planted_slowdown_reads_regressed(tiny_tokenizer_dir: Path,
                                                                      tmp_path: Path) -> None:
    repo, matrix, commit = paired_repo(tmp_path, MATRIX.format(model=tiny_tokenizer_dir, itl=4))
    out = tmp_path / "out"
    same = regress(repo, matrix, out, "--against", "HEAD", "--min-rounds", "2", "--max-rounds", "4")
    assert same.returncode in (0, 3), same.stdout + same.stderr
    check = paired(out)
    assert check["reference_commit"] == commit and not check["candidate_dirty"]
    rows = check["result"]["rows"]
    assert rows and not [r for r in rows if r["status"] == "regressed"]
    assert 2 <= len(check["orders"]) <= 4 and check["orders"][:2] in (["reference", "candidate"],
                                                                     ["candidate", "reference"])
    tree = repo / "build" / "regress" / "trees" / commit[:12]
    assert git(tree, "rev-parse", "HEAD") == commit
    # the reference ran its own harness: the committed copy in its worktree
    reference_lock = json.loads(next((out / "m" / "paired").glob("*/reference/round-01/m/lock.json")).read_text())
    assert reference_lock["harness"]["commit"] == commit
    assert "paired rounds" in same.stdout and f"--against {commit[:12]} --seed 3" in same.stdout

    matrix.write_text(MATRIX.format(model=tiny_tokenizer_dir, itl=8))  # the engine, configured twice as slow
    slower = regress(repo, matrix, out, "--against", "HEAD", "--min-rounds", "2", "--max-rounds", "3")
    assert slower.returncode == 1, slower.stdout + slower.stderr
    check = paired(out)
    assert check["candidate_dirty"]
    statuses = {(r["label"].rsplit("/", 1)[-1], r["metric"]): r["status"] for r in check["result"]["rows"]}
    assert statuses[("c1", "output_throughput")] == "regressed"
    assert statuses[("c1", "tpot_ms.median")] == "regressed"
    assert check["stopped"] == "every figure settled"


def test_an_unknown_revision_or_a_matrix_the_revision_lacks_is_refused(tiny_tokenizer_dir: Path,
                                                                      tmp_path: Path) -> None:
    repo, matrix, _ = paired_repo(tmp_path, MATRIX.format(model=tiny_tokenizer_dir, itl=4))
    out = tmp_path / "out"
    unknown = regress(repo, matrix, out, "--against", "no-such-branch")
    assert unknown.returncode == 2 and "no-such-branch' is no commit" in unknown.stderr
    assert "fix: git fetch" in unknown.stderr
    newer = repo / "new.yaml"
    newer.write_text(matrix.read_text())
    lacking = regress(repo, newer, out, "--against", "HEAD")
    assert lacking.returncode == 2 and "new.yaml does not exist at HEAD" in lacking.stderr
    backwards = regress(repo, matrix, out, "--against", "HEAD", "--min-rounds", "5", "--max-rounds", "3")
    assert backwards.returncode == 2 and "--min-rounds" in backwards.stderr


def test_escalation_pairs_only_the_doubtful_figures_against_the_baselines_revision(
        tiny_tokenizer_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, matrix, commit = paired_repo(tmp_path, MATRIX.format(model=tiny_tokenizer_dir, itl=4))
    monkeypatch.chdir(tmp_path)  # a relative --out, as .ci/run passes (reports/): each side runs from its own tree
    out, lock = Path("out"), repo / "lock"
    assert cli.harness("run", matrix, "--out", out, "--lock-dir", lock, "--launches", "3").returncode == 0
    assert cli.harness("baseline", matrix, "--out", out, "--lock-dir", lock, "--allow-dirty").returncode == 0
    # the baseline records the installed harness's commit; this repository's copy of it is what made it here
    path = lock / "m.baseline.json"
    data = json.loads(path.read_text())
    for entry in data["machines"]:
        entry["harness_commit"] = commit
        for cell in entry["cells"].values():  # a baseline from a faster hour: every throughput now reads doubtful
            cell["values"]["output_throughput"] = [v * 1.5 for v in cell["values"]["output_throughput"]]
    path.write_text(json.dumps(data))
    done = regress(repo, matrix, out, "--lock-dir", lock, "--escalate", "--min-rounds", "2", "--max-rounds", "3")
    # both cells' throughput is doubtful by construction; a timing figure the machine's load made doubtful in this
    # run's quick check (its baseline is from a minute before) joins them, and is paired alike
    assert re.search(r"escalating \d+ doubtful figure\(s\) to a paired check beside", done.stdout), \
        done.stdout + done.stderr
    check = paired(out)
    focus = sorted(metric for _, metric in check["focus"])
    assert focus.count("output_throughput") == 2, focus
    assert {r["metric"] for r in check["result"]["rows"]} == set(focus)
    assert "escalated verdict: PASS" in done.stdout or "escalated verdict: INCONCLUSIVE" in done.stdout
    assert done.returncode in (0, 3)
    # a budget the quick check used up: no paired round, the quick check's verdict stands
    spent = regress(repo, matrix, out, "--lock-dir", lock, "--escalate", "--budget-minutes", "0")
    assert "no paired rounds: the quick check used the --budget-minutes 0" in spent.stdout, spent.stdout
    assert "escalating" not in spent.stdout and spent.returncode in (1, 3)


def test_an_interrupted_check_keeps_its_finished_rounds_and_leaves_no_process(tiny_tokenizer_dir: Path,
                                                                               tmp_path: Path) -> None:
    repo, matrix, commit = paired_repo(tmp_path, MATRIX.format(model=tiny_tokenizer_dir, itl=40))
    out = tmp_path / "out"
    root = out / "m" / "paired" / commit[:12]
    # the executable, as a terminal starts it (SIGINT at its default: see test_pipeline_fake's interrupt test)
    proc = subprocess.Popen([sys.executable, "-m", "harness", "regress", str(matrix), "--repo", str(repo), "--out",
                             str(out), "--against", "HEAD", "--min-rounds", "3", "--max-rounds", "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(root.glob("*/round-02/harness.log")):
        time.sleep(0.2)  # round 1 done (its verdict saved), round 2's first side under way
    assert list(root.glob("*/round-02/harness.log")), "round 2 did not start in time"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=150)
    assert proc.returncode == 130, stderr
    assert "the finished rounds and the verdict so far are on disk" in stderr
    saved = json.loads((root / "paired.json").read_text())
    assert len(saved["orders"]) == 1 and saved["result"]["rows"]
    assert not live_pids("harness_testing.fake_engine")
    assert not live_pids("harness", "--history", "none")  # no side's harness run either
