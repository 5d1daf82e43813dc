"""Every path the harness reads or writes, in one place, and the files of a cell the store itself owns.

Layout under ``<root>/<matrix>/`` (``reports/`` by default)::

    runs/<cell_id>/cell.json        the cell's full spec (what was asked)                      store
    runs/<cell_id>/records.jsonl    one line per request, warm-up included and flagged          load.records
    runs/<cell_id>/server.log       the server's log while this cell ran                        store
    runs/<cell_id>/summary.json     a CellResult: status ok/failed, reason, measured summary     store
    runs/<cell_id>/parity.json      the cell's parity verdict (parity.cell_parity.CellParity)   parity
    runs/<cell_id>/telemetry.json   NVML telemetry, or why there is none                        telemetry
    runs/<cell_id>/launches/<k>/    launch k's records.jsonl, server.log and summary.json, when the matrix asks
                                    for several launches (summary.json above then pools them)   store
    calibration.json                the machine-speed probes around every round of launches    calibration
    predictions.json                each cell's prediction, or why there is none, made before launch  predict
    predicted.md, predicted.json    the predicted capstone (`harness predict`) and its predictions,
                                    nothing measured                                       report.predicted
    searches/<search_id>.json       an SLO search: its probes in order, the answer, why it stopped  store
    servers/<server_id>/server.log  the whole log of every launch of that server config         servers.process
    servers/<server_id>/<part>.log  each part of a deployment (replica0, prefill0, decode0) or a
                                    replica's other nodes (node1, ...); server.log is the front's servers.deployment
    servers/<server_id>/kv/         KV blocks a file-based connector hands from prefill to decode,
                                    removed after each launch                                   pipeline.launch
    parity/<server_id>/<decoding>.json  one BFCL run on that server (parity.run_result)          parity
    parity/<server_id>/multi_turn.conversations.json  its BFCL multi-turn run, entry by entry
                                    (multi_turn.json: the same as one item per entry)   parity.multi_turn_result
    traces/<server_id>/             where the engine's profiler writes during the launch        profiling
    crosscheck/crosscheck.json      the last `harness crosscheck` (and its server.log)   crosscheck_result
    slurm/                          submitit's job folder: scripts, pickles, each job's logs     submitit
    slurm/jobs.json                 the Slurm jobs this run submitted, for resume and Ctrl-C     pipeline.slurm_rounds
    gate.json                       the gate's verdict on this run                              verdict.gate
    run.json                        this run's id and start: a forced or repeated run gets a new one,
                                    a resumed run keeps it (the history's run key)              store
    lock.json                       this run's environment lock                                 verdict.lock
    writer.lock                     held (flock) by the one `harness run` writing here: its pid  store_writer
    plots/*.png, report.md          the rendered report                                         report
    explorer.html                   the explorer: interactive frontiers with earlier runs overlaid, latency
                                    CDFs, plotly.js inlined (written with the report)           report.explorer_page
    export/br/*.yaml                `harness export`: one Benchmark Report (llm-d's) per measured cell and
                                    launch; export/cells.csv, cells.parquet: a row each         export

Beside it, ``profiles/<matrix>/<cell_id>/`` (profiling) and, committed, ``lock/<matrix>.lock.json`` and
``lock/<matrix>.baseline.json`` (verdict), and the predictors' content cache
``build/predict-cache/`` (predict.stage). The right column is the one module that defines each file's schema and
writes it; every reader goes through that module and finds the file here. The results history,
``<root>/history.sqlite`` unless a URL is given (``Store.history_url``), is shared by every matrix under the root
and written only by ``harness.history``.

A cell is complete when its summary.json says ``ok`` and its records read back whole; failed cells are retried by the
next run. A stored file found damaged when read back (cut short, bytes flipped, the wrong shape, a directory in its
place) is set aside as ``<name>.damaged``, never deleted, and what it held counts as not measured
(``harness.stored_files``); one run at a time writes the directory (``harness.store_writer``). Every file above
that the harness writes whole is written through the one atomic write (``harness.atomic_write``: a temporary file
beside it, synced, then renamed): ``write_atomic`` here for texts, ``load.records.write_jsonl`` for records
streamed line by line. So a crash or Ctrl-C never leaves a half-written file that looks finished. The exceptions are
streams: the servers' logs, appended as they run, and what the engines and submitit write themselves (traces, KV
blocks, the job folder). The schemas of the store's own records (``CellResult``, ``RunStamp``, ``SearchRecord``)
are ``harness.result_records``.
"""

from __future__ import annotations

import errno
import uuid
from datetime import UTC, datetime
from pathlib import Path

from harness.atomic_write import write_atomically
from harness.errors import StorageError
from harness.plan.cells import Cell
from harness.result_records import CellResult, RunStamp, SearchRecord
from harness.stored_files import load_or_set_aside, records_damage, set_aside


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` (text as UTF-8) through the one atomic write (``harness.atomic_write``)."""
    write_atomically(path, lambda out: out.write(data.encode() if isinstance(data, str) else data))


FULL_DISK = frozenset({errno.ENOSPC, errno.EDQUOT})


def full_disk(exc: OSError, root: Path) -> StorageError | None:
    """The error to stop a run with when ``exc`` says the disk under ``root`` is full (``None`` for any other
    fault, which is a bug to show whole)."""
    if exc.errno not in FULL_DISK:
        return None
    return StorageError(f"no space left on the disk under {root} (writing {exc.filename or 'a result'}: "
                        f"{exc.strerror}); the cells finished before are kept whole\n  fix: free space there "
                        f"(df -h {root}) or point --out at a larger disk, then run the same command again to resume")


def expert_load_files(results_dir: Path) -> list[Path]:
    """Every expert-load record a run stored under its results directory (``reports/<matrix>``), any cell, any
    launch (``Store.expert_load_path``)."""
    runs = results_dir / "runs"
    return sorted([*runs.glob("*/expert_load.json"), *runs.glob("*/launches/*/expert_load.json")])


class Store:
    """The paths of one matrix's results, and the cell files the store itself owns."""

    def __init__(self, root: Path, matrix_name: str, lock_dir: Path = Path("lock"), history: str | None = None) -> None:
        self.dir = root / matrix_name
        self.matrix_name = matrix_name
        self.lock_dir = lock_dir
        self.history = history
        self._whole: dict[tuple[str, int, int], bool] = {}

    @property
    def history_url(self) -> str:
        """The results history's database URL: the one given, else the SQLite file under the root (``none``: off)."""
        return self.history or f"sqlite:///{(self.dir.parent / 'history.sqlite').resolve()}"

    @property
    def run_stamp_path(self) -> Path:
        return self.dir / "run.json"

    def read_run_stamp(self) -> RunStamp | None:
        return load_or_set_aside(self.run_stamp_path, RunStamp.model_validate_json)

    def begin_run(self, *, fresh: bool) -> RunStamp:
        """This run's stamp: a new one when ``fresh`` (forced or repeated) or none is stored, else the stored one (a
        resumed run is the same run)."""
        stamp = None if fresh else self.read_run_stamp()
        if stamp is None:
            stamp = RunStamp(run_id=uuid.uuid4().hex, started_at=now_iso())
            write_atomic(self.run_stamp_path, stamp.model_dump_json(indent=2))
        return stamp

    # --- per cell ------------------------------------------------------------------------------------------
    def cell_dir(self, cell: Cell | str) -> Path:
        return self.dir / "runs" / (cell if isinstance(cell, str) else cell.cell_id)

    def launch_dir(self, cell: Cell | str, launch: int | None = None) -> Path:
        """Where one launch's files go: the cell's own directory for a single-launch run (``launch`` None)."""
        return self.cell_dir(cell) if launch is None else self.cell_dir(cell) / "launches" / str(launch)

    def records_path(self, cell: Cell, launch: int | None = None) -> Path:
        return self.launch_dir(cell, launch) / "records.jsonl"

    def records_paths(self, cell: Cell | str) -> list[Path]:
        """The records of ``cell`` on disk: its own file, else every launch's (a run of several rounds stores each
        launch apart, even a cell's only one)."""
        own = self.launch_dir(cell) / "records.jsonl"
        return [own] if own.is_file() else sorted(self.cell_dir(cell).glob("launches/*/records.jsonl"))

    def expert_load_path(self, cell: Cell | str, launch: int | None = None) -> Path:
        """The engine's expert-load counts over one launch's measured load (``harness.telemetry.expert_load_watch``)."""
        return self.launch_dir(cell, launch) / "expert_load.json"

    def expert_load_paths(self, cell: Cell | str) -> list[Path]:
        """Every launch's expert-load counts of ``cell`` on disk."""
        where = self.cell_dir(cell)
        return sorted([*where.glob("expert_load.json"), *where.glob("launches/*/expert_load.json")])

    def parity_verdict_path(self, cell: Cell | str) -> Path:
        return self.cell_dir(cell) / "parity.json"

    def telemetry_path(self, cell: Cell | str) -> Path:
        return self.cell_dir(cell) / "telemetry.json"

    def profile_dir(self, cell: Cell | str) -> Path:
        """``profiles/<matrix>/<cell_id>/``, beside the results root (``reports/``)."""
        return self.profiles_root / self.matrix_name / (cell if isinstance(cell, str) else cell.cell_id)

    # --- per server ----------------------------------------------------------------------------------------
    def server_log(self, server_id: str) -> Path:
        return self.dir / "servers" / server_id / "server.log"

    def deployment_path(self, name: str) -> Path:
        """What a deployment's server said about itself at the start of the run (``SelfDescription``, no secrets)."""
        return self.dir / "deployments" / f"{name}.json"

    def kv_scratch_dir(self, server_id: str) -> Path:
        return self.dir / "servers" / server_id / "kv"

    def parity_run_path(self, server_id: str, decoding: str) -> Path:
        return self.dir / "parity" / server_id / f"{decoding}.json"

    def parity_multi_turn_path(self, server_id: str) -> Path:
        return self.dir / "parity" / server_id / "multi_turn.conversations.json"

    def trace_dir(self, server_id: str) -> Path:
        """Where the engine's profiler writes during a launch; each window's files move to the cell's profile."""
        return self.dir / "traces" / server_id

    # --- per run -------------------------------------------------------------------------------------------
    @property
    def profiles_root(self) -> Path:
        return self.dir.parent.parent / "profiles"

    @property
    def report_path(self) -> Path:
        return self.dir / "report.md"

    @property
    def plots_dir(self) -> Path:
        return self.dir / "plots"

    @property
    def explorer_path(self) -> Path:
        """The explorer page, written with the report: one self-contained HTML file."""
        return self.dir / "explorer.html"

    @property
    def export_dir(self) -> Path:
        """Where ``harness export`` writes unless told elsewhere: ``br/`` for the reports, the tables beside it."""
        return self.dir / "export"

    @property
    def gate_path(self) -> Path:
        return self.dir / "gate.json"

    @property
    def run_lock_path(self) -> Path:
        return self.dir / "lock.json"

    @property
    def calibration_path(self) -> Path:
        return self.dir / "calibration.json"

    @property
    def predicted_report_path(self) -> Path:
        """The predicted capstone (``harness predict``): the matrix answered by its predictor, nothing measured."""
        return self.dir / "predicted.md"

    @property
    def predicted_cells_path(self) -> Path:
        """The predictions behind ``predicted.md`` (kept apart from a run's own ``predictions.json``)."""
        return self.dir / "predicted.json"

    @property
    def predictions_path(self) -> Path:
        """Every cell's prediction (or the reason for none), made before the run launched anything."""
        return self.dir / "predictions.json"

    @property
    def slurm_dir(self) -> Path:
        return self.dir / "slurm"

    @property
    def slurm_jobs_path(self) -> Path:
        return self.slurm_dir / "jobs.json"

    @property
    def crosscheck_dir(self) -> Path:
        return self.dir / "crosscheck"

    @property
    def crosscheck_path(self) -> Path:
        return self.crosscheck_dir / "crosscheck.json"

    # --- committed -----------------------------------------------------------------------------------------
    def paired_dir(self, commit: str) -> Path:
        """A paired regression check against ``commit`` (``harness.regress``): each side's rounds, as each side's
        own store wrote them, and the verdict (``paired.json``)."""
        return self.dir / "paired" / commit[:12]

    @property
    def committed_lock_path(self) -> Path:
        return self.lock_dir / f"{self.matrix_name}.lock.json"

    def baseline_path(self, override: str | Path | None = None) -> Path:
        """The gate's baseline: ``override`` (``--baseline`` or the matrix's ``gates.baseline``), else
        ``lock/<matrix>.baseline.json``."""
        return Path(override) if override is not None else self.lock_dir / f"{self.matrix_name}.baseline.json"

    # --- the files the store owns --------------------------------------------------------------------------
    def write_cell(self, cell: Cell) -> None:
        write_atomic(self.cell_dir(cell) / "cell.json", cell.model_dump_json(indent=2))

    def write_server_log(self, cell: Cell, text: bytes, launch: int | None = None) -> None:
        write_atomic(self.launch_dir(cell, launch) / "server.log", text)

    def cell_logs(self, cell: Cell | str) -> list[Path]:
        """The server's log while ``cell`` ran, of every launch stored."""
        where = self.cell_dir(cell)
        return sorted([*where.glob("server.log"), *where.glob("launches/*/server.log")])

    def write_result(self, cell: Cell, result: CellResult, launch: int | None = None) -> None:
        """The cell's result (``launch`` None), or one launch's when the matrix asks for several."""
        self.write_cell(cell)
        write_atomic(self.launch_dir(cell, launch) / "summary.json", result.model_dump_json(indent=2))

    def read_result(self, cell: Cell | str, launch: int | None = None) -> CellResult | None:
        """The stored result; None when absent. A damaged one (from an incompatible version too), or one whose
        records no longer read back whole, is set aside (``harness.stored_files``): the cell is simply not
        complete, and the next run redoes it."""
        path = self.launch_dir(cell, launch) / "summary.json"
        result = load_or_set_aside(path, CellResult.model_validate_json)
        if result is None or self._records_whole(cell, launch, empty_ok=result.status != "ok"):
            return result
        set_aside(path, "its records are damaged (set aside beside it)")
        return None

    def _records_whole(self, cell: Cell | str, launch: int | None, *, empty_ok: bool = True) -> bool:
        """Whether the records behind ``result`` read back whole (each launch's, for a result that pools them);
        damaged records are set aside. Checked once per file state and store."""
        own = self.launch_dir(cell, launch) / "records.jsonl"
        pooled = self.launch_dir(cell, launch) / "launches"
        if launch is None and not own.exists() and pooled.is_dir():
            finished = sorted(int(k.name) for k in pooled.iterdir() if k.name.isdigit()
                              and (k / "records.jsonl").exists() and (k / "summary.json").exists())
            return all(self.read_result(cell, k) is not None for k in finished)
        try:
            state = own.stat()
        except FileNotFoundError:
            return True  # a cell with no records (its server never started) is whole as it is
        key = (str(own), state.st_size, state.st_mtime_ns)
        if key not in self._whole:
            why = records_damage(own, empty_ok=empty_ok)
            if why is not None:
                set_aside(own, f"damaged ({why})")
            self._whole[key] = why is None
        return self._whole[key]

    def is_complete(self, cell: Cell, launch: int | None = None, launches: int = 1) -> bool:
        """Launch ``launch`` of the cell finished ok; or (``launch`` None) the cell's result pools ``launches``."""
        result = self.read_result(cell, launch)
        if result is None or result.status != "ok":
            return False
        return launch is not None or launches <= 1 or (result.summary is not None and
                                                       result.summary.launches >= launches)

    def search_path(self, search_id: str) -> Path:
        return self.dir / "searches" / f"{search_id}.json"

    def write_search(self, record: SearchRecord) -> None:
        write_atomic(self.search_path(record.search_id), record.model_dump_json(indent=2))

    def read_search(self, search_id: str) -> SearchRecord | None:
        return load_or_set_aside(self.search_path(search_id), SearchRecord.model_validate_json)

    def clear_search(self, search_id: str, probes: tuple[Cell, ...]) -> None:
        """Forget a search and its probes' results (a forced rerun searches afresh, reusing nothing)."""
        for cell in probes:
            (self.cell_dir(cell) / "summary.json").unlink(missing_ok=True)
            self.clear_launches(cell)
        self.search_path(search_id).unlink(missing_ok=True)

    def clear_launches(self, cell: Cell) -> None:
        """Forget the cell's per-launch results (a forced rerun measures every launch afresh)."""
        for summary in (self.cell_dir(cell) / "launches").glob("*/summary.json"):
            summary.unlink()
