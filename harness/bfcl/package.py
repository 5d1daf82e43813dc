"""Access to the installed ``bfcl-eval`` wheel: its data, loader, tool conversion, AST checker and aggregation.

BFCL is used as a library, never rewritten, but its top-level imports would pull in every vendor SDK it supports
(``anthropic``, ``cohere``, ``google-genai``, ``tree_sitter`` ...), pinned to versions that clash with engine
environments. The wheel is therefore installed with ``--no-deps`` and this module makes the few parts the harness
needs importable with narrow dependencies only (``filelock``, ``tenacity``; ``pandas``/``numpy`` for the
aggregation helpers), by putting small stand-ins into ``sys.modules`` before the first import:

- ``bfcl_eval.constants.model_config``: its registry imports every handler class. The checker reads it only to
  ask whether a model's names had ``.`` replaced by ``_``; the harness maps sanitised names back itself, so the
  stand-in answers "no" for any model name (``convert_func_name`` in BFCL's ``eval_checker/ast_eval/ast_checker.py``).
- ``bfcl_eval.model_handler.parser.{java,js}_parser``: they need ``tree_sitter`` and serve Java/JavaScript
  prompt-mode decoding only, which the harness does not use.

It also points ``BFCL_PROJECT_ROOT`` (unless the user set it) at a scratch folder, because importing
``bfcl_eval.utils`` creates ``result/``, ``score/`` and ``.file_locks/`` under that root, by default inside
site-packages, which may be read-only in an engine image.

Everything else in the package goes through ``bfcl()``, which imports once and names the fix when it cannot.
"""

from __future__ import annotations

import collections
import functools
import importlib.metadata
import importlib.util
import os
import sys
import tempfile
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

BFCL_VERSION = "2026.3.23"
"""The wheel version the harness is written and tested against (data version BFCL_v4)."""

INSTALL_HINT = (f"pip install --no-deps bfcl-eval=={BFCL_VERSION} && pip install 'tenacity>=8.5' 'filelock>=3.12' "
                "pandas")


class BfclUnavailable(HarnessError):
    """The ``bfcl-eval`` wheel (or one of its narrow dependencies) is not importable."""


@dataclass(frozen=True)
class _NoDotRewrite:
    """The one field of BFCL's model config that its AST checker reads."""

    underscore_to_dot: bool = False


@dataclass(frozen=True, slots=True)
class Bfcl:
    """The BFCL functions the harness calls, imported from the wheel."""

    version: str
    data_dir: Path
    load_dataset_entry: Callable[..., list[dict[str, Any]]]
    load_ground_truth_entry: Callable[[str], list[dict[str, Any]]]
    add_language_specific_hint_to_function_doc: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
    convert_to_tool: Callable[..., list[dict[str, Any]]]
    gorilla_to_openapi: dict[str, str]
    openai_completions_style: Any
    ast_checker: Callable[..., dict[str, Any]]
    python_language: Any
    is_function_calling_format_output: Callable[[Any], bool]
    is_empty_output: Callable[[Any], bool]


def _install_stand_ins() -> None:
    model_config = types.ModuleType("bfcl_eval.constants.model_config")
    model_config.MODEL_CONFIG_MAPPING = collections.defaultdict(_NoDotRewrite)  # type: ignore[attr-defined]
    # setdefault: a process that already imported the real module keeps it.
    sys.modules.setdefault(model_config.__name__, model_config)
    for module, function in (("java_parser", "parse_java_function_call"),
                             ("js_parser", "parse_javascript_function_call")):
        name = f"bfcl_eval.model_handler.parser.{module}"
        if name in sys.modules or importlib.util.find_spec("tree_sitter") is not None:
            continue
        stand_in = types.ModuleType(name)
        setattr(stand_in, function, _needs_tree_sitter)
        sys.modules[name] = stand_in


def _needs_tree_sitter(*_args: object, **_kwargs: object) -> None:
    raise BfclUnavailable("Java/JavaScript prompt-mode decoding needs tree_sitter, which the harness does not install")


@functools.cache
def bfcl() -> Bfcl:
    """Import the parts of ``bfcl-eval`` the harness uses; raise ``BfclUnavailable`` naming the fix if it cannot."""
    os.environ.setdefault("BFCL_PROJECT_ROOT", str(Path(tempfile.gettempdir()) / "harness-bfcl"))
    _install_stand_ins()
    try:
        version = importlib.metadata.version("bfcl-eval")
        from bfcl_eval.constants.enums import Language, ModelStyle
        from bfcl_eval.constants.eval_config import PROMPT_PATH
        from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
        from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
        from bfcl_eval.model_handler.utils import convert_to_tool
        from bfcl_eval.utils import (
            add_language_specific_hint_to_function_doc,
            is_empty_output,
            is_function_calling_format_output,
            load_dataset_entry,
            load_ground_truth_entry,
        )
    except (ImportError, importlib.metadata.PackageNotFoundError) as e:
        raise BfclUnavailable(f"BFCL parity needs the bfcl-eval wheel and its narrow dependencies ({e}); "
                              f"install them with: {INSTALL_HINT}") from e
    return Bfcl(version, Path(PROMPT_PATH), load_dataset_entry, load_ground_truth_entry,
                add_language_specific_hint_to_function_doc, convert_to_tool, dict(GORILLA_TO_OPENAPI),
                ModelStyle.OPENAI_COMPLETIONS, ast_checker, Language.PYTHON, is_function_calling_format_output,
                is_empty_output)


@dataclass(frozen=True, slots=True)
class BfclAggregation:
    """BFCL's leaderboard helpers; each takes ``[{"accuracy", "total_count", "display_accuracy"}, ...]``."""

    weighted: Callable[..., dict[str, Any]]
    unweighted: Callable[..., dict[str, Any]]
    percentage_weighted: Callable[..., dict[str, Any]]


@functools.cache
def bfcl_aggregation() -> BfclAggregation:
    """BFCL's leaderboard aggregation helpers; imported apart from ``bfcl()`` because they import pandas."""
    bfcl()
    try:
        from bfcl_eval.eval_checker.eval_runner_helper import (
            calculate_percentage_weighted_accuracy,
            calculate_unweighted_accuracy,
            calculate_weighted_accuracy,
        )
    except ImportError as e:
        raise BfclUnavailable(f"BFCL's aggregation helpers need pandas and numpy ({e}); install them with: "
                              f"{INSTALL_HINT}") from e
    return BfclAggregation(calculate_weighted_accuracy, calculate_unweighted_accuracy,
                           calculate_percentage_weighted_accuracy)


