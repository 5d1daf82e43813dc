"""Reading back stored files: damaged content set aside (never deleted), an unreadable file named with its fix;
then the corruption fuzzing of a whole stored run.

A small finished run (two cells, each with its summary, records and spec, the run's stamp and lock) is written
through the store's own writers, no server at all. Hypothesis then damages one of its files (cut at any byte, bytes
flipped, valid JSON of the wrong shape, emptied, a directory in its place) and runs a command that reads it back:
``report``, ``gate`` and ``export`` through the command line, and ``run``'s resume decision (``Store.is_complete``,
what ``run_plan`` asks of every cell before it launches anything). Each must either recover (the damaged file set
aside as ``<name>.damaged``, never deleted, and what it held counted as not measured) or exit 2 with a message that
names the file; never a traceback, and the undamaged cell is never lost. Derandomized: the same cases every run.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness import compare as compare_module
from harness.calibration import Calibration, ProbeResult, write_calibration
from harness.cli import app
from harness.cli import judge as judge_cli
from harness.errors import DamagedFile, HarnessError, StoredFileError
from harness.load import RequestRecord, write_jsonl
from harness.parity import ParityRule, cell_parity, compare, write_cell_parity, write_run
from harness.parity.run_result import stored_run
from harness.plan import Plan
from harness.predict import NoPrediction, PlanPredictions, plan_predictions, write_predictions
from harness.profiling import ProfileOutcome, ProfileSummary, read_summary, write_summary
from harness.result_records import RunStamp
from harness.store import Store, write_atomic
from harness.stored_files import load_or_set_aside, read_stored_text, records_damage, set_aside
from harness.telemetry import ExpertLoadRecord

from tests.support.bfcl_wire import fake_run
from tests.support.finished_run import FinishedRun, damage, finished_records, invoke, write_finished_run


def stamp(path: Path) -> RunStamp | None:
    return load_or_set_aside(path, RunStamp.model_validate_json)


def test_an_absent_file_is_none_and_a_whole_one_is_read(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    assert stamp(path) is None
    path.write_text(RunStamp(run_id="r", started_at="t").model_dump_json())
    assert stamp(path) == RunStamp(run_id="r", started_at="t")


@pytest.mark.parametrize("content", [b'{"run_id": "r", "start', b"", b"[]", b'{"run_id": 1}', b"\xff\xfe{"])
def test_damaged_content_is_set_aside_and_read_as_absent(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "run.json"
    path.write_bytes(content)
    assert stamp(path) is None
    assert not path.exists() and (tmp_path / "run.json.damaged").read_bytes() == content


def test_a_directory_in_the_file_s_place_is_set_aside_and_a_second_damage_keeps_the_first(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.mkdir()
    assert stamp(path) is None and (tmp_path / "run.json.damaged").is_dir()
    path.write_text("{")
    assert stamp(path) is None and (tmp_path / "run.json.damaged.1").read_text() == "{"


def test_an_unreadable_file_is_named_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # root (this VM) reads a chmod 000 file: no permission is simulated at the one read every reader goes through
    path = tmp_path / "run.json"
    path.write_text("{}")

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))
    monkeypatch.setattr(Path, "read_bytes", refuse)
    refused = f"(?s){path}: cannot be read \\(Permission denied\\).*chmod u\\+rw {path}"
    with pytest.raises(StoredFileError, match=refused):
        read_stored_text(path)
    with pytest.raises(StoredFileError, match="cannot be read"):
        stamp(path)  # not set aside: the file may be whole, only the permission is wrong
    assert path.is_file()


def test_read_stored_text_names_non_utf8_and_directories(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"ok\xff")
    with pytest.raises(DamagedFile, match="not UTF-8 text at byte 2"):
        read_stored_text(tmp_path / "bin")
    with pytest.raises(DamagedFile, match="a directory where the harness wrote a file"):
        read_stored_text(tmp_path)


def test_set_aside_refused_by_the_disk_is_named(tmp_path: Path) -> None:
    with pytest.raises(StoredFileError, match="could not be moved aside"):
        set_aside(tmp_path / "absent.json", "cut short")


def test_records_are_whole_or_say_why(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    assert records_damage(path) is None  # none: not damaged
    write_jsonl(path, [RequestRecord(index=i, warmup=False, input_tokens=4, max_tokens=4, send_time=0.0,
                                     end_time=1.0) for i in range(3)])
    whole = path.read_bytes()
    assert records_damage(path) is None
    path.write_bytes(whole[:-1])
    assert records_damage(path) == "cut short: its last line has no end"
    path.write_bytes(whole[:40])
    assert "near line 1: JSONDecodeError" in (records_damage(path) or "")
    path.write_bytes(b"")
    assert records_damage(path) is None  # no requests at all (a cell that failed before any)
    assert records_damage(path, empty_ok=False) == "empty: the requests of a finished cell are gone"
    path.write_bytes(b'{"index": 0}\n')
    assert "KeyError" in (records_damage(path) or "")
    path.unlink()
    path.mkdir()
    assert records_damage(path) == "a directory where the harness wrote a file"


# --- corruption fuzzing of a finished run ------------------------------------------------------------------

CASES = 40
FILES = ("summary.json", "records.jsonl", "cell.json", "lock.json", "run.json")
COMMANDS = ("report", "gate", "export", "run-resume")
TALLY: Counter[str] = Counter()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> FinishedRun:
    return write_finished_run(tmp_path_factory.mktemp("finished"))


@pytest.fixture(scope="module", autouse=True)
def counts() -> Iterator[None]:
    TALLY.clear()
    yield
    print(f"\nstore corruption fuzzing: {TALLY['cases']} cases, {TALLY['recovered']} recovered, "
          f"{TALLY['refused']} refused (exit 2 naming the file), {TALLY['unharmed']} not read by the command, "
          f"{TALLY['undetected']} undetected (a flipped byte leaving valid content)")


def victim(run: FinishedRun, name: str) -> Path:
    store = run.store()
    cell = run.plan.cells[1]
    return {"lock.json": store.run_lock_path, "run.json": store.run_stamp_path}.get(name, store.cell_dir(cell) / name)


@settings(max_examples=CASES, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), name=st.sampled_from(FILES),
       kind=st.sampled_from(("truncate", "flip", "shape", "empty", "directory")), command=st.sampled_from(COMMANDS))
def test_a_damaged_stored_file_is_set_aside_or_named(template: FinishedRun, tmp_path_factory: pytest.TempPathFactory,
                                                     data: st.DataObject, name: str, kind: str, command: str) -> None:
    root = tmp_path_factory.mktemp("damaged")
    shutil.copytree(template.root, root, dirs_exist_ok=True)
    run = FinishedRun(root, root / "matrix.yaml", template.plan, template.exits)
    path = victim(run, name)
    original = path.read_bytes()
    damaged = damage(kind, original, data.draw)
    path.unlink()
    if damaged is None:
        path.mkdir()
    else:
        path.write_bytes(damaged)
    whole, hurt = run.plan.cells
    if command == "run-resume":
        complete = {cell.cell_id: run.store().is_complete(cell) for cell in run.plan.cells}
        code, output, normal = 0, "", 0
    else:
        result = invoke(run, command)
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        code, output, normal = result.exit_code, result.output, run.exits[command]
        complete = {cell.cell_id: run.store().is_complete(cell) for cell in run.plan.cells}
    TALLY["cases"] += 1
    assert complete[whole.cell_id], "the undamaged cell must stay complete"
    if code == 2 and str(path) in output:  # names the file (and the fix after it)
        TALLY["refused"] += 1
        return
    assert code == normal, output
    if sorted(path.parent.glob(f"{name}.damaged*")):
        TALLY["recovered"] += 1  # set aside: what it held counts as not measured
        if name in ("summary.json", "records.jsonl"):
            assert not complete[hurt.cell_id], "a cell with a damaged file must count as not measured"
    elif not path.is_file() or path.read_bytes() != damaged:
        TALLY["recovered"] += 1  # written again whole by the command (the run's lock, its stamp)
    elif kind == "flip" and name in ("summary.json", "records.jsonl"):
        TALLY["undetected"] += 1  # a flipped digit can leave valid content with another value: no checksum yet
    else:
        TALLY["unharmed"] += 1  # not read by this command (a cell's spec; the lock, by a resume)


# --- the other stored files, against every command that reads them -------------------------------------
# Corruption fuzzing of the stored files beyond a cell's own (the fuzzing above covers those): the parity
# verdicts and runs, profiles' summaries, expert-load dumps, the calibration, the predictions and the predictor's cache,
# the committed baseline and lock, and the history database; against the commands that read them back: ``report``,
# ``gate``, ``export``, ``baseline``, ``history`` (``--record``: it records the stored run), ``regress`` (its quick
# gate on the stored run: the fresh run is stubbed, no server), ``compare`` (its launches stubbed to store finished
# results), ``predict`` (its cache) and ``run``'s resume decisions (parity runs, profiles).
#
# Each (file, command) pair below is one where the command reads the file; each pair is tried once with the file
# emptied, then Hypothesis (derandomized) damages one at random (cut at any byte, a bit flipped, valid JSON of the
# wrong shape, emptied, a directory in its place, or unreadable: the VM runs as root, so no permission is simulated at
# the one seam every reader goes through, ``Path.read_bytes``). The command must recover (the file set aside as
# ``<name>.damaged``, or written again whole), refuse (exit 2 naming the file), or go on naming the file in a warning
# or the report without using it (the history, which a run's results never depend on; a gate that could not run);
# never a traceback, and never the damaged content read as data.

READER_CASES = 40
READER_TALLY: Counter[str] = Counter()
READER_PAIRS = (
    ("parity.json", "export"), ("parity.json", "report"), ("parity-run", "run-resume"),
    ("profile-summary", "run-resume"), ("expert_load.json", "history"), ("calibration.json", "history"),
    ("calibration.json", "gate"), ("predictions.json", "report"),
    ("predict-cache", "predict"), ("baseline", "gate"), ("baseline", "regress"), ("baseline", "baseline"),
    ("baseline", "report"), ("committed-lock", "gate"), ("committed-lock", "report"),
    ("committed-lock", "regress"), ("history.sqlite", "history"), ("history.sqlite", "report"),
    ("history.sqlite", "gate"), ("summary.json", "compare"), ("records.jsonl", "compare"),
)
READER_KINDS = ("truncate", "flip", "shape", "empty", "directory", "unreadable")


@dataclass(frozen=True, slots=True)
class Template:
    root: Path
    plan: Plan
    exits: dict[str, int]

    def __repr__(self) -> str:
        return f"Template({self.root})"

    def store(self, root: Path | None = None) -> Store:
        return Store((root or self.root) / "reports", self.plan.matrix.name, (root or self.root) / "lock",
                     history=f"sqlite:///{(root or self.root) / 'reports' / 'history.sqlite'}")


def invoke_stored(root: Path, command: str) -> tuple[int, str, BaseException | None]:
    history = ["--history", f"sqlite:///{root / 'reports' / 'history.sqlite'}"]
    args = {"export": [], "baseline": ["--allow-dirty", "--add-repeat"],
            "history": [*history, "--record"]}.get(command, history)
    where = ["--out", str(root / "reports"), "--lock-dir", str(root / "lock")]
    result = CliRunner().invoke(app, [command, str(root / "matrix.yaml"), *where, *args])
    return result.exit_code, result.output, result.exception


def _add_stored_files(root: Path, plan: Plan, store: Store) -> None:
    """What a run with parity, profiles, expert load, probes and predictions leaves beside the cells."""
    server = plan.cells[0].server.server_id
    ran = fake_run({f"simple_{i}": i % 4 != 0 for i in range(8)})
    write_run(ran, store.parity_run_path(server, "free"))
    for cell in plan.cells:
        write_cell_parity(cell_parity({"free": compare(ran, ran, ParityRule(max_drop_pp=1.0))}),
                          store.parity_verdict_path(cell))
        write_summary(ProfileSummary(cell_id=cell.cell_id, label=cell.label, outcome=ProfileOutcome(
            status="missing", runtime="vllm", mode="torch", reason="no capture")), store.profile_dir(cell))
        write_atomic(store.expert_load_path(cell), ExpertLoadRecord(
            label=cell.label, reason="no collector", expected_rows=60, requests=4, measured_s=1.0).model_dump_json())
    write_calibration(Calibration(probes={0: ProbeResult(at="2026-11-29T00:00:00Z", python_s=1.0, torch_s=2.0)}),
                      store.calibration_path)
    write_predictions(PlanPredictions(
        {c.cell_id: NoPrediction(cell_id=c.cell_id, reason="no predictor") for c in plan.cells}),
        store.predictions_path)
    cache = root / "predict-cache" / "x.json"
    cache.parent.mkdir()
    cache.write_bytes(plan_predictions._OUTCOMES.dump_json({"c": NoPrediction(cell_id="c", reason="r")}))


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Template:
    root = tmp_path_factory.mktemp("stored")
    run = write_finished_run(root)
    run_ = Template(root, run.plan, {})
    _add_stored_files(root, run.plan, run_.store())
    for command in ("baseline", "report", "gate", "export", "history"):
        if command == "baseline":  # three promotions of the run: a baseline the gate judges against in full
            for more in ([], ["--add-repeat"]):
                CliRunner().invoke(app, ["baseline", str(root / "matrix.yaml"), "--out", str(root / "reports"),
                                         "--lock-dir", str(root / "lock"), "--allow-dirty", *more])
        run_.exits[command], output, exc = invoke_stored(root, command)
        assert exc is None or isinstance(exc, SystemExit), (command, output)
    assert run_.exits == {"baseline": 0, "report": 0, "gate": 0, "export": 0, "history": 0}, run_.exits
    return run_


@pytest.fixture(scope="module", autouse=True)
def reader_counts() -> Iterator[None]:
    READER_TALLY.clear()
    yield
    print(f"\nstored-file readers fuzzing: {READER_TALLY['cases']} cases, {READER_TALLY['recovered']} recovered, "
          f"{READER_TALLY['refused']} refused (exit 2 naming the file), "
          f"{READER_TALLY['warned']} warned (named in a warning or the report, not used), "
          f"{READER_TALLY['undetected']} undetected (a flipped byte leaving valid content)")
    for key in sorted(k for k in READER_TALLY if ":" in k):
        print(f"  {key}: {READER_TALLY[key]}")


def reader_victim(stored: Template, root: Path, name: str) -> Path:
    store, cell = stored.store(root), stored.plan.cells[1]
    return {"parity.json": store.parity_verdict_path(cell),
            "parity-run": store.parity_run_path(cell.server.server_id, "free"),
            "profile-summary": store.profile_dir(cell) / "summary.json",
            "expert_load.json": store.expert_load_path(cell), "calibration.json": store.calibration_path,
            "predictions.json": store.predictions_path, "predict-cache": root / "predict-cache" / "x.json",
            "baseline": store.baseline_path(), "committed-lock": store.committed_lock_path,
            "history.sqlite": root / "reports" / "history.sqlite"}.get(name, store.cell_dir(cell) / name)


def _compare(stored: Template, root: Path, hurt: Callable[[], None]) -> tuple[int, str]:
    """``compare``'s reading of the two sides' results, its launches stubbed to store finished ones (B's second
    launch of the second cell is then damaged)."""
    async def launch(plan: Plan, store: Store, launch: int) -> None:
        for cell in plan.cells:
            write_jsonl(store.records_path(cell, launch), finished_records(5))
            finished = stored.store().read_result(cell)
            assert finished is not None
            store.write_result(cell, finished, launch)
        if store.matrix_name == "b" and launch == 1:
            hurt()

    async def nothing(*_: object, **__: object) -> None:
        return None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compare_module, "_launch_side", launch)
        patch.setattr(compare_module, "ensure_fixtures", nothing)
        patch.setattr(compare_module, "check_workloads", lambda *_, **__: None)
        try:
            result = asyncio.run(compare_module.run_compare(stored.plan, stored.plan, root / "cmp", launches=2,
                                                            sources=("a.yaml", "b.yaml")))
        except HarnessError as exc:
            return 2, str(exc)
    return result.exit_code, ""


def run_command(stored: Template, root: Path, command: str, name: str, path: Path) -> tuple[int, str]:
    if command in ("run-resume", "predict"):  # what a rerun asks before it measures parity or profiles again;
        try:                                     # the predictor's cache, read before it answers afresh
            if command == "predict":
                found: object = plan_predictions._read_cache(path)
            else:
                found = stored_run(path) if name == "parity-run" else read_summary(path.parent)
        except HarnessError as exc:  # what the command line turns into exit 2
            return 2, str(exc)
        assert found is None or path.is_file(), "a damaged file read as data"
        return 0, ""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(judge_cli, "run_matrix", lambda request: 0)  # regress: its fresh run stubbed, no server
        code, output, exc = invoke_stored(root, command)
    assert exc is None or isinstance(exc, SystemExit), f"{command}: {exc!r}\n{output}"
    return code, output


def _hurt(path: Path, kind: str, damaged: bytes | None, patch: pytest.MonkeyPatch) -> None:
    if kind == "unreadable":  # root reads every file: no permission is simulated at the readers' one seam
        read_bytes = Path.read_bytes

        def refuse(self: Path) -> bytes:
            if self == path:
                raise PermissionError(13, "Permission denied", str(self))
            return read_bytes(self)
        patch.setattr(Path, "read_bytes", refuse)
        return
    path.unlink()
    if damaged is None:
        path.mkdir()
    else:
        path.write_bytes(damaged)


def check(stored: Template, root: Path, pair: tuple[str, str], kind: str,
          draw: Callable[[st.SearchStrategy[int]], int]) -> None:
    """Damage one file of a copy of the stored at ``root``, run the command that reads it, tally the outcome."""
    name, command = pair
    if name == "history.sqlite" and kind in ("unreadable", "shape"):
        kind = "garbage"  # SQLite opens its file itself; JSON or any bytes are simply not a database
    shutil.copytree(stored.root, root, dirs_exist_ok=True)
    path = reader_victim(stored, root, name)
    original = path.read_bytes()
    damaged = (b"not a database at all " * 8 if kind == "garbage" else
               None if kind == "unreadable" else damage(kind, original, draw))
    with pytest.MonkeyPatch.context() as patch:
        if command == "compare":
            path = Store(root / "cmp", "b").launch_dir(stored.plan.cells[1], 1) / name
            code, output = _compare(stored, root, lambda: _hurt(path, kind, damaged, patch))
            normal = 0
        else:
            _hurt(path, kind, damaged, patch)
            code, output = run_command(stored, root, command, name, path)
            normal = stored.exits.get(command, 0)
    READER_TALLY["cases"] += 1
    READER_TALLY[f"{name}: {command}"] += 1
    if code == 2 and str(path) in output:
        READER_TALLY["refused"] += 1
        return
    assert code == normal or (command == "compare" and code in (1, 3)), output
    if sorted(path.parent.glob(f"{path.name}.damaged*")):
        READER_TALLY["recovered"] += 1
    elif kind != "unreadable" and (not path.is_file() or path.read_bytes() != damaged):
        READER_TALLY["recovered"] += 1  # written again whole by the command (the history, a promoted baseline)
    elif str(path) in output or (command == "report" and path.name in stored.store(root).report_path.read_text()):
        READER_TALLY["warned"] += 1  # named in a warning or the report, not used (the history; a gate not run)
    elif kind == "flip" or (name == "history.sqlite" and kind == "truncate"):
        READER_TALLY["undetected"] += 1  # a flip leaving valid JSON, or SQLite pages the command never reads
    else:
        pytest.fail(f"{kind} {name} went unnoticed by {command}:\n{output}")


@pytest.mark.parametrize("pair", READER_PAIRS, ids=[f"{n}-{c}" for n, c in READER_PAIRS])
def test_every_reader_recovers_from_an_emptied_file_or_names_it(stored: Template, tmp_path: Path,
                                                                 pair: tuple[str, str]) -> None:
    check(stored, tmp_path, pair, "empty", lambda _: 0)


@settings(max_examples=READER_CASES, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), pair=st.sampled_from(READER_PAIRS), kind=st.sampled_from(READER_KINDS))
def test_a_damaged_stored_file_is_recovered_or_named_by_every_reader(
        stored: Template, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, pair: tuple[str, str],
        kind: str) -> None:
    check(stored, tmp_path_factory.mktemp("damaged"), pair, kind, data.draw)


def test_the_history_database_damaged_is_named_with_the_fix(stored: Template, tmp_path: Path) -> None:
    shutil.copytree(stored.root, tmp_path, dirs_exist_ok=True)
    database = tmp_path / "reports" / "history.sqlite"
    database.write_bytes(database.read_bytes()[:100])
    code, output, _ = invoke_stored(tmp_path, "history")
    assert code == 2 and str(database) in output and "fix: " in output and "Traceback" not in output


def test_a_committed_baseline_of_the_wrong_shape_is_named(stored: Template, tmp_path: Path) -> None:
    shutil.copytree(stored.root, tmp_path, dirs_exist_ok=True)
    (tmp_path / "lock" / "t.baseline.json").write_text(json.dumps([1, 2]))
    code, output, _ = invoke_stored(tmp_path, "gate")
    assert code == 2 and "t.baseline.json is not a baseline of this harness" in output


def test_a_stored_result_damaged_after_a_compare_launch_is_not_pooled(stored: Template, tmp_path: Path) -> None:
    hurt = Store(tmp_path / "cmp", "b").launch_dir(stored.plan.cells[1], 1) / "summary.json"
    code, _ = _compare(stored, tmp_path, lambda: hurt.write_text("{"))
    assert code in (1, 2, 3) and (hurt.parent / "summary.json.damaged").is_file()

