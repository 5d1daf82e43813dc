"""The work a make target does, by phase: each phase's wall time and the CPU seconds of everything it ran.

    python3 -m tools.phase_clock run PHASE --log build/phases/bench.jsonl -- make setup
    python3 -m tools.phase_clock report build/phases/bench.jsonl --title "make bench" --since 1764400000

Wall time on these shared VMs says as much about the machine as about the change: a 2-core AMD EPYC without
AVX-512 took 2.5x the wall of one with it for ``make test`` and 1.9x for ``make bench`` (2026-11-29). CPU seconds
are the work itself, so a session on a fast machine can read what its change costs on the slow one. ``run`` makes
itself the child subreaper of the phase (Linux ``PR_SET_CHILD_SUBREAPER``): a server's engine process orphaned when
its parent stops first is re-parented to it and reaped by it, so the kernel's account of reaped children
(``RUSAGE_CHILDREN``) holds every process the phase started, however deep. A process still alive when the phase's
command ends is not counted, and the record says how many there were.

Standard library only: ``make`` runs it with the system Python before any virtual environment exists.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36

ORPHAN_GRACE_S = 10.0
"""How long a phase waits for the processes its command left running to end."""
SLOWEST_KIND = "AVX2-only AMD EPYC"
WALL_RATIO_TO_SLOWEST: dict[str, dict[str, float]] = {
    # Wall of the command on the slowest kind over its wall on this kind, fresh clones of nearly the same commit,
    # 2026-11-29 (docs/studies/timings.md, "Machine kinds"): an input measured once, not in this run
    "AVX-512 AMD EPYC": {"make test": 2.5, "make bench": 1.9},
    SLOWEST_KIND: {"make test": 1.0, "make bench": 1.0},
}
"""By machine kind (:func:`machine_kind`) and command: the factor that turns a wall time here into the slowest
machine's."""
PHASES_LIKE: dict[str, dict[str, str]] = {
    # .ci/run: make test, then the regression check, which launches and measures servers as make bench does. No ratio
    # was measured for .ci/run as a whole: each phase is scaled by the command it is (or is like), an assumption
    ".ci/run": {"make-test": "make test", "regression-check": "make bench"},
}
"""By command made of other commands: its phases and the command whose measured ratio scales each."""


@dataclass(frozen=True, slots=True)
class PhaseRecord:
    """One phase: when it started (epoch seconds), its wall and CPU seconds, its exit code, and how many of its
    processes outlived it (their CPU is missing from ``cpu_s``)."""

    phase: str
    started: float
    wall_s: float
    cpu_s: float
    rc: int
    left_running: int = 0


def machine_kind(cpuinfo: str) -> str:
    """The kind of machine the budgets are measured on, from ``/proc/cpuinfo``: its vendor and its widest matrix
    instructions (what the engines' bf16 work runs on)."""
    flags: set[str] = set()
    vendor = "CPU"
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags" and not flags:
            flags = set(value.split())
        elif key.strip() == "vendor_id":
            vendor = {"AuthenticAMD": "AMD EPYC", "GenuineIntel": "Intel Xeon"}.get(value.strip(), value.strip())
    if "amx_tile" in flags:
        return f"Intel AMX {vendor}" if "Intel" not in vendor else "Intel AMX Xeon"
    return f"AVX-512 {vendor}" if "avx512f" in flags else f"AVX2-only {vendor}"


def _prctl(option: int, value: int) -> bool:
    try:
        return bool(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # not Linux: the count then holds the children their parents reaped
        return False


def die_with(parent: int) -> None:
    """Have the kernel send SIGTERM (passed on to the phase's command) when ``parent`` dies, even by SIGKILL, as
    ``python -m harness.fixtures --parent`` does for a build started in the background; exits at once when
    ``parent`` is already gone."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the request above: the signal will never come
        sys.exit(128 + signal.SIGTERM)


def _children_left() -> int:
    """Processes whose parent is this one (orphans re-parented here that are still running)."""
    me, count = str(os.getpid()), 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        count += fields.get("PPid", "").strip() == me
    return count


def run_phase(phase: str, argv: list[str]) -> PhaseRecord:
    """Run ``argv`` to its end, reaping every descendant orphaned on the way; SIGTERM and SIGHUP are passed on to
    it, SIGINT reaches it from the terminal as it reaches this process (which waits for it)."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    started, clock = time.time(), time.monotonic()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command decides what Ctrl-C does; this one records it
    child = os.posix_spawnp(argv[0], argv, dict(os.environ), setsigdef=(signal.SIGINT,))
    for forwarded in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(forwarded, lambda signum, _frame: os.kill(child, signum))
    rc = 0
    while True:
        try:
            pid, status, _ = os.wait4(-1, 0)
        except ChildProcessError:
            break
        if pid == child:
            rc = os.waitstatus_to_exitcode(status)
            break
    # what the command orphaned on its way out (a server's engine process stopping after its front end): reaped as
    # it ends, for a grace; one still running after it is a leak, counted as such
    deadline = time.monotonic() + ORPHAN_GRACE_S
    while True:
        try:
            if os.wait4(-1, os.WNOHANG)[0] == 0:
                if time.monotonic() > deadline or not _children_left():
                    break
                time.sleep(0.05)
        except ChildProcessError:
            break
    wall = time.monotonic() - clock
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return PhaseRecord(phase, started, wall, used.ru_utime + used.ru_stime, 128 - rc if rc < 0 else rc,
                       _children_left())


def read_records(log: Path) -> list[PhaseRecord]:
    """The phases a log holds, by start (a line cut short by a kill is skipped)."""
    records = []
    for line in log.read_text().splitlines() if log.is_file() else []:
        try:
            records.append(PhaseRecord(**json.loads(line)))
        except (ValueError, TypeError):
            continue
    return sorted(records, key=lambda r: r.started)


def report(records: list[PhaseRecord], title: str, kind: str, since: float | None, now: float) -> list[str]:
    """The table ``make`` ends with: each phase's start, wall, CPU and cores busy; the command's wall and CPU; and
    its wall on the slowest machine kind measured, by that kind's measured ratio (an input, so labelled)."""
    if not records:
        return [f"{title}: no phase recorded"]
    start = since if since is not None else records[0].started
    lines = [f"{title}: CPU time by phase on this machine ({kind})",
             f"  {'phase':<22} {'from':>7} {'wall':>8} {'CPU':>8} {'cores':>6}"]
    for r in sorted(records, key=lambda r: r.started):
        note = f"  ({r.left_running} still running: not counted)" if r.left_running else ""
        note += f"  exit {r.rc}" if r.rc else ""
        lines.append(f"  {r.phase:<22} {r.started - start:>6.0f}s {r.wall_s:>7.0f}s {r.cpu_s:>7.0f}s "
                     f"{_cores(r.cpu_s, r.wall_s)}{note}")
    wall = now - start
    cpu = sum(r.cpu_s for r in records)
    lines.append(f"  {'all':<22} {0:>6.0f}s {wall:>7.0f}s {cpu:>7.0f}s {_cores(cpu, wall)}")
    if title in PHASES_LIKE:
        return [*lines, _scaled_by_phase(records, title, kind, wall)]
    ratio = WALL_RATIO_TO_SLOWEST.get(kind, {}).get(title)
    if ratio is None:
        lines.append(f"  on the {SLOWEST_KIND}: no ratio measured for {kind} (docs/studies/timings.md)")
    elif ratio != 1.0:
        lines.append(f"  on the {SLOWEST_KIND}: about {wall * ratio / 60:.1f} min (this wall x {ratio:g}, the "
                     f"ratio measured between the two kinds on 2026-11-29: an input, not this run's measurement)")
    return lines


def _scaled_by_phase(records: list[PhaseRecord], title: str, kind: str, wall: float) -> str:
    """A composite command's wall on the slowest kind: each phase's wall by its like command's ratio."""
    ratios = WALL_RATIO_TO_SLOWEST.get(kind, {})
    like = PHASES_LIKE[title]
    if any(like.get(r.phase) not in ratios for r in records):
        return f"  on the {SLOWEST_KIND}: no ratio measured for {kind} (docs/studies/timings.md)"
    scaled = sum(r.wall_s * ratios[like[r.phase]] for r in records)
    parts = ", ".join(f"{r.phase} x {ratios[like[r.phase]]:g}" for r in records)
    return (f"  on the {SLOWEST_KIND}: about {(scaled + max(0.0, wall - sum(r.wall_s for r in records))) / 60:.1f} "
            f"min ({parts}: each phase by the ratio measured for the command it is like, 2026-11-29: inputs, not "
            f"this run's measurement)")


def minutes_left(records: list[PhaseRecord], title: str, kind: str, budget_min: float, phase: str) -> float:
    """What is left, in minutes on this machine, of ``title``'s budget on the slowest kind for its next phase
    ``phase`` (its finished phases scaled by their ratios, ``phase`` by its own): never below zero."""
    ratios = WALL_RATIO_TO_SLOWEST.get(kind, {})
    like = PHASES_LIKE.get(title, {})
    if phase not in like or any(like.get(r.phase) not in ratios for r in records) or like[phase] not in ratios:
        return budget_min  # no ratio for this kind: the budget as it stands
    spent = sum(r.wall_s * ratios[like[r.phase]] for r in records) / 60
    return max(0.0, (budget_min - spent) / ratios[like[phase]])


def _cores(cpu_s: float, wall_s: float) -> str:
    """Cores kept busy on average; a dash for a phase too short to say (a check that found its work done)."""
    return f"{cpu_s / wall_s:>6.2f}" if wall_s >= 1 else f"{'-':>6}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tools.phase_clock", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a phase's command, append its record to the log")
    run.add_argument("phase")
    run.add_argument("--log", type=Path, required=True)
    run.add_argument("--parent", type=int, metavar="PID", help="stop the phase (SIGTERM) when this process dies")
    table = commands.add_parser("report", help="the log's phases as a table")
    table.add_argument("log", type=Path)
    table.add_argument("--title", required=True)
    table.add_argument("--since", type=float, help="epoch seconds the command started (default: its first phase)")
    left = commands.add_parser("left", help="minutes left here of a composite command's budget on the slowest "
                                            "kind, for its next phase")
    left.add_argument("log", type=Path)
    left.add_argument("--title", required=True, choices=sorted(PHASES_LIKE))
    left.add_argument("--budget-min", type=float, required=True)
    left.add_argument("--phase", required=True)
    given = sys.argv[1:] if argv is None else argv
    split = given.index("--") if "--" in given else len(given)  # the phase's command: everything after --
    args, command = parser.parse_args(given[:split]), given[split + 1:]
    kind = machine_kind(Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else "")
    if args.command == "report":
        print("\n".join(report(read_records(args.log), args.title, kind, args.since, time.time())))
        return 0
    if args.command == "left":
        print(f"{minutes_left(read_records(args.log), args.title, kind, args.budget_min, args.phase):.1f}")
        return 0
    if not command:
        parser.error("run: the phase's command goes after --")
    if args.parent is not None:
        die_with(args.parent)
    record = run_phase(args.phase, command)
    args.log.parent.mkdir(parents=True, exist_ok=True)
    with args.log.open("a") as out:  # one short line, appended whole: phases running at once do not interleave
        out.write(json.dumps(asdict(record)) + "\n")
    return record.rc


if __name__ == "__main__":
    sys.exit(main())
