"""The harness's exception tree: faults of the harness or its inputs, never of a measured request.

A failed request is data (a ``RequestRecord`` with an error); a cell whose server would not start is data
(a failed ``CellResult``). Exceptions are for the control path only::

    HarnessError                 exit code 2 from the CLI
    ├── ConfigError              the matrix file is wrong: names the file, the key path and the fix
    ├── LaunchError              a server did not become ready (recorded as the cell's failure)
    │   └── ServerExited         ...because its process exited; carries the log tail
    ├── ServerLost               a ready server died or stopped answering mid-cell
    ├── DeploymentRefused        a deployment refused the harness's credentials (401/403): names it and the variable
    ├── FixtureError             a fixture model could not be built or found
    ├── ClusterError             Slurm refused a submission or its queue could not be read
    ├── StorageError             the results could not be written (a full disk): names where and the fix
    ├── StoredFileError          a file the harness wrote cannot be read back (no permission): names it and the fix
    │   └── DamagedFile          ...its content is damaged (cut short, bytes flipped, the wrong shape, a directory)
    ├── StoreBusy                another `harness run` holds the same results directory: names its pid
    ├── HistoryError             the results history cannot be opened, read or written: names the URL and the fix
    └── PathRefused              a path given on the command line cannot serve: names the option, the path and the fix
"""

from __future__ import annotations


class HarnessError(Exception):
    """Base of every harness fault; the CLI turns it into a message and exit code 2."""


class ConfigError(HarnessError):
    """A matrix that cannot be run as written.

    The message always names where (file and key path), what is wrong, and how to fix it, so that a user
    never has to read a traceback to correct a YAML file.
    """

    def __init__(self, source: str, key: str, problem: str, fix: str) -> None:
        self.source, self.key, self.problem, self.fix = source, key, problem, fix
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {problem}\n  fix: {fix}")


class LaunchError(HarnessError):
    """A server did not become ready; ``log_tail`` holds the last lines it wrote."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        self.log_tail = log_tail
        super().__init__(message)


class ServerExited(LaunchError):
    """The server process exited before it was ready."""


class ServerLost(HarnessError):
    """A server that was ready died or stopped answering while a cell ran."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        self.log_tail = log_tail
        super().__init__(message)


class DeploymentRefused(HarnessError):
    """A deployment answered 401 or 403 before any measurement: the message names the deployment, what it answered
    and the environment variable to check; never the key."""


class FixtureError(HarnessError):
    """A fixture model could not be built, or a matrix names one that does not exist."""


class ClusterError(HarnessError):
    """The cluster refused or lost a job (submission failed, the queue cannot be read, the controller is down)."""


class HistoryError(HarnessError):
    """The results history database cannot be opened, migrated, read or written; the message names the URL
    (password hidden) and the fix. A run's own results never depend on it."""


class StorageError(HarnessError):
    """The results could not be written under the reports root: its disk is full or over quota. Every result
    finished before is whole on disk (atomic writes), so the fix is space, then a rerun that resumes."""


class StoredFileError(HarnessError):
    """A file the harness wrote under the reports root (or committed under ``lock/``) cannot be read back as it
    is; the message names the file and the fix (``harness.stored_files``)."""


class DamagedFile(StoredFileError):
    """A stored file's content is damaged: cut short, bytes flipped, valid JSON of the wrong shape, empty, or a
    directory in its place. Where the harness can redo what it held, the file is set aside instead of raising."""


class StoreBusy(HarnessError):
    """Another ``harness run`` is writing the same results directory; the message names its pid."""


class PathRefused(HarnessError):
    """A path given on the command line is of the wrong kind (a file for a directory, or the reverse), may not be
    read or written, or lies under a file: refused before anything launches or is written."""
