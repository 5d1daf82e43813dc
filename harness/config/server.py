"""How server processes run: the engine settings every server of a matrix shares (``server:``), and where each
runtime lives (``runtimes.<name>``): a local interpreter or a container image pinned by digest.

Engines pin conflicting dependencies (torch, CUDA, kernels), so each runtime names its own environment;
``harness.servers.container`` turns an image into a ``docker run`` argv. Runtime adapters translate the settings
into each engine's own flags.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    _added_later: ClassVar[frozenset[str]] = frozenset()
    """Fields added after cell ids were first published: they enter a server's id only when set (plan.cells)."""


_DIGEST_PINNED = re.compile(r"^[^\s@]+@sha256:[0-9a-f]{64}$")


class DockerOptions(_Strict):
    """How ``docker run`` starts a runtime's image (plumbing: it stays out of server ids)."""

    gpus: str = Field("all", description="value of --gpus (e.g. all, or '\"device=0,1\"')")
    model_cache: str = Field("~/.cache/huggingface", description="host directory mounted as the image's "
                             "/root/.cache/huggingface, so weights download once per host")
    network: Literal["host", "bridge"] = Field("host", description="host: the engine binds the host's port; "
                                               "bridge: the port is published on 127.0.0.1")
    shm_size: str | None = Field(None, description="--shm-size (e.g. 32g); --ipc=host usually makes it moot")
    pass_env: tuple[str, ...] = Field(("HF_TOKEN",), description="host variables passed through when set")
    python: str = Field("python3", description="interpreter inside the image")
    extra_args: tuple[str, ...] = Field((), description="docker run options added verbatim")


class RuntimeEnv(_Strict):
    """Where and how a runtime's server process runs: engines pin conflicting dependencies, so each runtime
    names its own interpreter or container image."""

    _added_later = frozenset({"image", "moe_a2a_backend"})

    python: str | None = Field(None, description="interpreter of the engine's environment; default: the harness's "
                               "(vLLM only: SGLang never shares the harness's environment)")
    image: str | None = Field(None, description="container image pinned by digest (name@sha256:...), run with "
                              "docker instead of a local interpreter")
    docker: DockerOptions = Field(default_factory=DockerOptions)
    extra_args: tuple[str, ...] = Field((), description="appended verbatim to every server argv of this runtime")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment for the server process")
    moe_a2a_backend: str | None = Field(None, description="MoE all-to-all backend when EP > 1, in this engine's "
                                        "spelling (vLLM --all2all-backend, SGLang --moe-a2a-backend)")

    @model_validator(mode="after")
    def _one_location(self) -> RuntimeEnv:
        if self.python and self.image:
            raise ValueError("give python (a local environment) or image (a container), not both")
        if self.image is not None and not _DIGEST_PINNED.match(self.image):
            raise ValueError(f"image {self.image!r} is not pinned by digest: a tag can move under you. Write "
                             "name@sha256:<64 hex>; `docker inspect --format '{{index .RepoDigests 0}}' IMAGE` "
                             "prints it")
        return self



ChunkedPrefill = Annotated[int, Field(gt=0)] | Literal["off"]


class ServerSettings(_Strict):
    _added_later = frozenset({"chunked_prefill", "prefix_caching", "grammar_backend"})

    host: str = Field("127.0.0.1", description="listen address; loopback unless you mean otherwise")
    max_num_seqs: int = Field(256, gt=0, description="engine cap on running requests (>= largest concurrency); "
                              "vLLM --max-num-seqs, SGLang --max-running-requests (always set: SGLang "
                              "otherwise caps speculative servers at 48)")
    seed: int = 0
    startup_timeout_s: float = Field(900, gt=0)
    request_timeout_s: float = Field(300, gt=0)
    chunked_prefill: ChunkedPrefill | None = Field(
        None, description="prefill chunk in tokens (vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size), "
                          "or off; default: the engine's")
    prefix_caching: bool | None = Field(None, description="prefix (radix) cache on or off; default: the engine's")
    grammar_backend: Literal["xgrammar", "llguidance", "outlines"] | None = Field(
        None, description="structured-output backend (vLLM --structured-outputs-config.backend, SGLang "
                          "--grammar-backend); default: the engine's")

    @field_validator("chunked_prefill", mode="before")
    @classmethod
    def _bare_off(cls, value: Any) -> Any:
        return "off" if value is False else value  # YAML 1.1 reads a bare `off` as false


__all__ = ["DockerOptions", "RuntimeEnv", "ServerSettings"]
