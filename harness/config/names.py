"""The one pattern for every name a user gives in a matrix: models, workloads, deployments and the matrix itself.

A name becomes a part of a cell's label (``model/runtime/.../workload/c16``, parts joined by ``/``), a path under
``reports/`` and a key in ``lock.json``, ``summary.json``, ``cell.json`` and the results history. So it is kept to
letters, digits, ``.``, ``_`` and ``-``, starts with a letter or digit and is at most ``NAME_MAX`` characters: a label
then splits back into its parts, a file name is never a path, and nothing a report shows needs escaping to be read.
The matrix's own name is the directory its results go to and is lower-case besides (``MATRIX_NAME_PATTERN``), so two
matrices never share a directory on a case-insensitive disk.

Refused at validation: pydantic reports ``workloads.<name>`` with the rule and ``validation_errors`` adds the fix.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

NAME_MAX = 64
NAME_PATTERN = rf"^[A-Za-z0-9][A-Za-z0-9._-]{{0,{NAME_MAX - 1}}}$"
"""A name a user gives: letters, digits, ``.``, ``_``, ``-``, starting with a letter or digit, 64 at most."""
MATRIX_NAME_PATTERN = rf"^[a-z0-9][a-z0-9._-]{{0,{NAME_MAX - 1}}}$"
"""The matrix's name: the same, lower-case (it names the results' directory)."""
NAME_ERROR = "name_pattern"
"""The pydantic error type of a refused name (``validation_errors`` maps it to its fix)."""
NAME_FIX = (f"rename it with letters, digits, '.', '_' or '-' only, starting with a letter or digit, {NAME_MAX} "
            "characters at most (e.g. chat-1k); the matrix's name lower-case too")


def _checked_name(value: str) -> str:
    if not re.fullmatch(NAME_PATTERN, value):
        shown = value if len(value) <= NAME_MAX else f"{value[:NAME_MAX]}... ({len(value)} characters)"
        raise PydanticCustomError(NAME_ERROR, "'{name}' is not a valid name: a name is a part of cell labels "
                                  "(joined by '/') and of file names", {"name": shown})
    return value


Name = Annotated[str, AfterValidator(_checked_name)]
"""A ``dict`` key (or field) that is a user's name: ``dict[Name, Workload]``."""

__all__ = ["MATRIX_NAME_PATTERN", "NAME_ERROR", "NAME_FIX", "NAME_MAX", "NAME_PATTERN", "Name"]
