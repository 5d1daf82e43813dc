"""The child process that executes BFCL multi-turn calls and checks entries, and the handle the run talks to it by.

BFCL executes model calls with ``eval`` and keeps each entry's class instances in module globals, so both happen
in a child of the run's own process (``python -c ...serve_worker()``, JSON lines on private pipes): the harness
never evals model output, no state survives a run, and the worker is killed on any error or cancellation.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import json
import logging
import os
import re
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import harness
from harness.bfcl.package import BfclUnavailable, bfcl
from harness.errors import HarnessError
from harness.parity.multi_turn_data import MultiTurnItem

log = logging.getLogger(__name__)

EXECUTION_TIMEOUT_S = 300.0
"""Limit on one worker call (a step's execution, or an entry's check); beyond it the worker counts as hung."""




class BfclWorkerFailed(HarnessError):
    """The worker process that executes BFCL's classes crashed, failed or stopped answering."""


EntryVerdict = tuple[bool, str | None, str | None]
"""(correct, BFCL's error_type, BFCL's error message)."""


def bfcl_entry(item: MultiTurnItem) -> dict[str, Any]:
    """What BFCL's execution and checker read of an entry (its ``test_entry`` keys), sent with every request."""
    return {"id": item.id, "initial_config": dict(item.initial_config),
            "involved_classes": list(item.involved_classes), "long_context": item.long_context}


@functools.cache
def _multi_turn() -> tuple[ModuleType, Callable[..., dict[str, Any]]]:
    bfcl()  # first: the stand-ins must be in sys.modules before any bfcl_eval import
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
    return multi_turn_utils, multi_turn_checker


def _ready(classes: list[str]) -> None:
    # Every class's module now, so that a missing dependency (mpmath for MathAPI) stops the run before its first
    # request rather than in the middle of an entry.
    _multi_turn()
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING
    try:
        for name in classes:
            importlib.import_module(CLASS_FILE_PATH_MAPPING[name])
    except (ImportError, KeyError) as e:
        raise BfclUnavailable(f"BFCL's executable class {e} cannot be loaded (MathAPI needs mpmath)") from None


def _execute(model_name: str, entry: dict[str, Any], calls: list[str]) -> list[str]:
    utils, _ = _multi_turn()
    results, _instances = utils.execute_multi_turn_func_call(
        calls, entry["initial_config"], entry["involved_classes"], model_name, entry["id"],
        long_context=entry["long_context"], is_evaL_run=False)
    return list(results)


def _score(model_name: str, entry: dict[str, Any], decoded: list[list[list[str]]],
           ground_truth: list[list[str]]) -> EntryVerdict:
    """``eval_runner._evaluate_single_multi_turn_entry`` after decoding: the turn-count check, then the checker."""
    _, checker = _multi_turn()
    try:
        if len(decoded) != len(ground_truth):
            return (False, "multi_turn:force_terminated",
                    f"Model was force-terminated during inference phase. The length of the model result turns "
                    f"({len(decoded)}) does not match the length of the ground truth turns ({len(ground_truth)}).")
        result = checker(decoded, ground_truth, entry, entry["id"].rsplit("_", 1)[0], model_name)
    except Exception as e:  # noqa: BLE001 - the checker asserts; whatever a model sent must end as a verdict
        return False, f"checker_error:{type(e).__name__}", str(e)[:500]
    finally:
        _forget(model_name, entry)
    if result.get("valid"):
        return True, None, None
    return False, str(result.get("error_type")), str(result.get("error_message"))


def _forget(model_name: str, entry: dict[str, Any]) -> None:
    # BFCL never frees its cached instances; these are execute_multi_turn_func_call's names for the inference
    # run, and for the checker's replay of the model's calls (+"_eval") and of the ground truth.
    utils, _ = _multi_turn()
    for name in (model_name, f"{model_name}_eval", f"{model_name}_ground_truth_eval"):
        for class_name in entry["involved_classes"]:
            vars(utils).pop(re.sub(r"[-./:]", "_", f"{name}_{entry['id']}_{class_name}_instance"), None)


_OPERATIONS: Mapping[str, Callable[..., Any]] = {"ready": _ready, "execute": _execute, "score": _score,
                                                  "forget": _forget}


def serve_worker() -> None:
    """The worker process's loop: one JSON request per line on stdin, one JSON answer per line on stdout."""
    # The protocol keeps private copies of stdin and stdout: what BFCL's classes print goes to stderr, and an
    # eval'd input() reads nothing of the requests.
    requests, answers = os.fdopen(os.dup(0), encoding="utf-8"), os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    for line in requests:
        request = json.loads(line)
        try:
            answer = {"result": _OPERATIONS[request.pop("op")](**request)}
        except BfclUnavailable as e:
            answer = {"unavailable": str(e)}
        except Exception:  # noqa: BLE001 - a fault here is the harness's; the parent raises it with this text
            answer = {"fault": traceback.format_exc()}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


class BfclWorker:
    """A child process, one per run, that runs BFCL's classes and checker: the only place model output is eval'd.

    A fresh interpreter (not a fork of the event-loop process) that holds nothing of the harness; it exits when
    its stdin closes and is killed on any abnormal exit, since a call may still be running (a hung execution).
    """

    def __init__(self, model_name: str, classes: Sequence[str], timeout_s: float = EXECUTION_TIMEOUT_S) -> None:
        self.model_name, self.classes, self.timeout_s = model_name, list(classes), timeout_s
        self._lock = asyncio.Lock()
        self._abandoned = False
        self._process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> BfclWorker:
        root = str(Path(harness.__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))}
        # limit: one answer is one line, past asyncio's default 64 KiB already in the long-context ground truth.
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "from harness.parity.multi_turn_worker import serve_worker; serve_worker()",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, limit=1 << 28)
        try:
            await self._call("ready", classes=self.classes)
        except BaseException:
            await self._close(kill=True)
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        await self._close(kill=exc_type is not None)

    async def execute(self, entry: dict[str, Any], calls: list[str]) -> list[str]:
        """BFCL's execution results of one step's calls, in the entry's persistent class instances."""
        results: list[str] = await self._call("execute", model_name=self.model_name, entry=entry, calls=calls)
        return results

    async def score(self, entry: dict[str, Any], decoded: list[list[list[str]]],
                    ground_truth: Sequence[Sequence[str]]) -> EntryVerdict:
        """BFCL's verdict on an entry's decoded calls (turn -> step -> call strings); frees its instances."""
        correct, error_type, message = await self._call("score", model_name=self.model_name, entry=entry,
                                                        decoded=decoded, ground_truth=[list(t) for t in ground_truth])
        return bool(correct), error_type, message

    async def forget(self, entry: dict[str, Any]) -> None:
        """Free the instances of an entry that will not be scored."""
        await self._call("forget", model_name=self.model_name, entry=entry)

    async def _call(self, op: str, **arguments: Any) -> Any:
        process = self._process
        assert process is not None and process.stdin is not None and process.stdout is not None
        async with self._lock:  # one request in flight: answers come back in order, one line each
            if self._abandoned:
                raise BfclWorkerFailed("an earlier request to BFCL's worker was abandoned; its answers are out of step")
            self._abandoned = True  # until the answer is read: a timeout or cancellation leaves it set
            process.stdin.write(json.dumps({"op": op, **arguments}).encode() + b"\n")
            try:
                await process.stdin.drain()
                line = await asyncio.wait_for(process.stdout.readline(), self.timeout_s)
            except TimeoutError:
                raise BfclWorkerFailed(f"BFCL's worker gave no answer to {op!r} within {self.timeout_s:g} s") from None
            except ConnectionError as e:
                raise BfclWorkerFailed(f"BFCL's worker stopped reading requests ({e})") from None
            self._abandoned = False
        if not line:
            raise BfclWorkerFailed(f"BFCL's worker exited (code {await process.wait()}) during {op!r}")
        answer = json.loads(line)
        if "unavailable" in answer:
            raise BfclUnavailable(answer["unavailable"])
        if "fault" in answer:
            raise BfclWorkerFailed(f"BFCL's worker failed during {op!r}:\n{answer['fault']}")
        return answer["result"]

    async def _close(self, kill: bool) -> None:
        process = self._process
        if process is None or process.returncode is not None:
            return
        try:
            if not kill and process.stdin is not None:
                process.stdin.close()
                await asyncio.wait_for(process.wait(), 10)
        finally:
            # Also reached when the graceful wait is cancelled or runs out: the worker never outlives the run.
            if process.returncode is None:
                process.kill()
                await process.wait()

