"""The matrix sections that ask for evidence beside the load test: ``parity`` (BFCL accuracy against the
reference precision) and ``profile`` (where the time of chosen cells goes). Strict like the rest of the matrix;
the stages that act on them are ``harness.parity.parity_runs`` and ``harness.profiling.profiled_cells``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

BFCL_DEFAULT_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
BFCL_SINGLE_TURN = (*BFCL_DEFAULT_CATEGORIES, "live_simple", "live_multiple", "live_parallel",
                    "live_parallel_multiple", "live_irrelevance")
"""The single-turn categories the parity stage runs (``harness.parity.CATEGORIES``, checked equal by a test)."""
BFCL_MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
"""The multi-turn categories (``harness.parity.MULTI_TURN_CATEGORIES``): conversations driven turn by turn against
BFCL's executable environments; the agentic ones (web search, memory) need network or models and are not run."""
BFCL_CATEGORIES = (*BFCL_SINGLE_TURN, *BFCL_MULTI_TURN)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ParitySpec(_Strict):
    """BFCL tool-call parity: every selected server runs the same seeded items under each decoding."""

    suite: Literal["bfcl"] = "bfcl"
    categories: tuple[str, ...] = Field(BFCL_DEFAULT_CATEGORIES, min_length=1, description=(
        "BFCL categories: single-turn (simple_python, multiple, parallel, parallel_multiple, irrelevance, "
        "live_simple, live_multiple, live_parallel, live_parallel_multiple, live_irrelevance) and multi-turn "
        "(multi_turn_base, multi_turn_miss_func, multi_turn_miss_param, multi_turn_long_context; run with free "
        "decoding only: a forced call at every step would never end a turn)"))
    limit: int | None = Field(None, gt=0, description="a seeded sample of at most this many items per category "
                                                      "(default: all)")
    seed: int = Field(0, description="the sample's and the bootstrap's seed")
    decoding: tuple[Literal["free", "required", "tool_choice_required", "json_schema"], ...] = Field(
        ("free",), min_length=1, description="free: tool_choice auto; required: tool_choice required "
                                             "(grammar-constrained); json_schema: response_format")
    reference: str = Field("bf16", description="precision label of the reference each cell is compared with "
                                               "(same model, runtime, parallelism and speculation)")
    reference_runtime: str | None = Field(None, description=(
        "the runtime whose server at the reference precision judges the servers of every other runtime too (same "
        "model, parallelism and speculation): SGLang serving the bf16 weights through its own tool-call parser and "
        "grammar backend against vLLM serving them, say; default: each runtime is its own reference"))
    max_drop_pp: float = Field(1.0, ge=0, description="a cell fails when its accuracy drops more than this many "
                                                      "points below the reference and the drop is significant")
    alpha: float = Field(0.05, gt=0, lt=1, description="significance level of the exact McNemar test")
    min_power: float = Field(0.8, ge=0, le=1, description=(
        "a pass is a finding only when its sample had at least this power against a 5-point drop (exact McNemar "
        "at alpha, at the measured discordance); below it the verdict is 'inconclusive' and the recommendation does "
        "not ship a cheaper precision on it. 0: every pass counts"))
    cells: tuple[dict[str, Any], ...] = Field((), description="axis selectors of the servers to run parity on "
                                                              "(default: every server)")
    concurrency: int = Field(8, gt=0, description="BFCL requests in flight")
    max_tokens: int = Field(512, gt=0, description="max_tokens of each BFCL request")
    request_timeout_s: float = Field(120.0, gt=0)
    multi_turn_limit: int | None = Field(None, gt=0, description="multi-turn: a seeded sample of at most this many "
                                         "entries per category (default: limit); an entry is a conversation of "
                                         "several turns, each of several requests")
    rerun_reference: bool = Field(True, description="run the reference server's free decoding twice and judge the "
                                  "reference cell on the rerun against the first run: the measured noise floor of "
                                  "the parity measurement (a rerun that flips items makes every verdict weaker)")
    max_steps: int = Field(20, gt=0, description="multi-turn: executing steps allowed per turn before the entry is "
                                                 "force-terminated (BFCL's MAXIMUM_STEP_LIMIT is 20)")

    def references(self, runtime: str) -> bool:
        """Whether a server of ``runtime`` at the reference precision is a reference (otherwise it is judged against
        ``reference_runtime``'s server)."""
        return self.reference_runtime is None or runtime == self.reference_runtime

    @property
    def single_turn(self) -> tuple[str, ...]:
        return tuple(c for c in self.categories if c in BFCL_SINGLE_TURN)

    @property
    def multi_turn(self) -> tuple[str, ...]:
        return tuple(c for c in self.categories if c in BFCL_MULTI_TURN)

    @field_validator("categories")
    @classmethod
    def _known(cls, categories: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [c for c in categories if c not in BFCL_CATEGORIES]
        if unknown:
            raise ValueError(f"unknown BFCL categories {unknown}; choose from {', '.join(BFCL_CATEGORIES)}")
        return categories


class ProfileSpec(_Strict):
    """Cells to profile: after the cell's measured load, one more window of it runs under the engine's profiler."""

    cells: tuple[dict[str, Any], ...] = Field((), description="axis selectors of the cells to profile")
    max_window_s: float = Field(30.0, gt=0, description="the capture is closed after this long, load or not")
    max_size_mib: float = Field(512.0, gt=0, description="a capture larger than this is kept but marked too large")
    requests: int = Field(16, gt=0, description="requests sent in the profiled window (at the cell's concurrency)")
    top_n: int = Field(15, gt=0, description="rows of the top-kernels / top-operators table")
    nsys_cells: tuple[dict[str, Any], ...] = Field(
        (), description="of the profiled CPU cells, those also captured under Nsight Systems (OS runtime, NVTX, CPU "
        "sampling) in a launch of their own after their server's work; on a GPU every profile is an nsys capture")
    nsys_window_s: int = Field(20, gt=0, le=600, description="seconds of load a CPU nsys capture holds")
    nsys_delay_floor_s: int | None = Field(
        None, ge=1, le=3600, description="the earliest second after launch a CPU nsys window opens (it opens at "
        "1.1x the measured launch's readiness plus 5 s, never sooner); unset: the engine's own floor, measured "
        "(vLLM 110 s: nsys 2022.4 hung in 5 of 5 captures of a vLLM server whose window opened 93-97 s after "
        "launch, and none of 3 at 109-110 s; SGLang none: 3 of 4 completed at 44-55 s; docs/cpu-engine.md)")
