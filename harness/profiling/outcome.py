"""What one profile capture produced: captured files, a capture over the size cap, or a missing profile and why.

A profile is an extra on top of a cell's measurement: every failure to get one is recorded here as data (status
and reason), never raised, so the cell's load-test results stand whatever happened to its profile.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.profiling.engine_profilers import ProfileMode

ProfileStatus = Literal["captured", "too_large", "missing"]
MissingKind = Literal["unsupported_runtime", "nsys_missing", "endpoint_absent", "failed", "no_output"]


class ProfileFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    bytes: int = Field(ge=0)


class ProfileOutcome(BaseModel):
    """The result of one capture window (``window.capture_window``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: ProfileStatus
    runtime: str
    mode: ProfileMode
    reason: str | None = Field(None, description="why missing / too large; None when captured")
    missing_kind: MissingKind | None = None
    files: tuple[ProfileFile, ...] = Field((), description="files kept in the cell's profile folder")
    total_bytes: int = Field(0, ge=0)
    window_s: float | None = Field(None, description="seconds from the start answer to the stop request")
    window_truncated: bool = Field(False, description="the window cap closed the capture before the load ended")
    stop_s: float | None = Field(None, description="seconds /stop_profile took (the engine writes traces here)")
    start_status: int | None = None
    stop_status: int | None = None

    @classmethod
    def missing(cls, runtime: str, mode: ProfileMode, kind: MissingKind, reason: str,
                **fields: object) -> ProfileOutcome:
        return cls.model_validate({"status": "missing", "runtime": runtime, "mode": mode, "missing_kind": kind,
                                   "reason": reason, **fields})

    @property
    def captured(self) -> bool:
        return self.status == "captured"
