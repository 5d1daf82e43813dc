"""A runtime's engine inside a container: the ``docker run`` argv wrapped around the engine's own argv.

GPU clusters run engines from images, and each engine pins its own CUDA, torch and kernels, so a runtime may name
an image (``runtimes.<name>.image``, pinned by digest: a tag can move between two runs of the same matrix). The
container gets the GPUs, the host's IPC namespace (NCCL and the engines' shared-memory queues need more than
docker's 64 MB /dev/shm), the host's model cache (weights download once per host, not once per launch), local
model directories read-only at the same path (so the engine argv is the same inside and out), and either the
host's network or one port published on loopback.

Reaping: ``ServerProcess`` signals the ``docker run`` process group; docker forwards SIGTERM to the container,
whose ``--init`` process passes it to the engine, and ``--rm`` deletes the container once the engine exits.
"""

from __future__ import annotations

from pathlib import Path

from harness.config.hardware import GpuHardware
from harness.plan.cells import ServerConfig
from harness.servers.process import LaunchSpec

CONTAINER_CACHE = "/root/.cache/huggingface"
"""Where the Hugging Face cache is inside the vLLM and SGLang images (both run as root)."""


def bind_host(server: ServerConfig) -> str:
    """The address the engine listens on: a bridged container must listen on all of its interfaces (only the
    host's loopback is published); everywhere else the matrix's ``server.host``."""
    env = server.runtime_env
    return "0.0.0.0" if env.image and env.docker.network == "bridge" else server.settings.host


def _local_dirs(server: ServerConfig, model_path: str) -> list[str]:
    """Absolute local paths the engine reads (the model, a local draft model), mounted read-only."""
    candidates = [model_path, server.speculation.draft_model or ""]
    return [p for p in dict.fromkeys(candidates) if p and Path(p).is_absolute() and Path(p).exists()]


def docker_argv(server: ServerConfig, engine_argv: list[str], env: dict[str, str], model_path: str, port: int,
                runtime_name: str) -> list[str]:
    """``docker run ... IMAGE <engine args>``: ``engine_argv[0]`` (the interpreter) becomes the entrypoint."""
    runtime_env = server.runtime_env
    assert runtime_env.image is not None
    opts = runtime_env.docker
    argv = ["docker", "run", "--rm", "--init", "--name", f"harness-{runtime_name}-{server.server_id}-{port}"]
    if isinstance(server.hardware, GpuHardware):
        argv += ["--gpus", opts.gpus]
    argv.append("--ipc=host")
    if opts.network == "host":
        argv += ["--network", "host"]
    else:
        argv += ["-p", f"{server.settings.host}:{port}:{port}"]
    if opts.shm_size:
        argv += ["--shm-size", opts.shm_size]
    argv += ["-v", f"{Path(opts.model_cache).expanduser()}:{CONTAINER_CACHE}"]
    for local in _local_dirs(server, model_path):
        argv += ["-v", f"{local}:{local}:ro"]
    for key, value in sorted(env.items()):
        argv += ["-e", f"{key}={value}"]
    for key in opts.pass_env:
        if key not in env:
            argv += ["-e", key]  # docker copies the host's value when it is set, and nothing when it is not
    argv += [*opts.extra_args, "--entrypoint", engine_argv[0], runtime_env.image, *engine_argv[1:]]
    return argv


def docker_launch(server: ServerConfig, engine_argv: list[str], env: dict[str, str], model_path: str, port: int,
                  runtime_name: str) -> LaunchSpec:
    """The LaunchSpec of a containerised engine; its environment travels as ``-e`` options, not to docker."""
    return LaunchSpec(argv=tuple(docker_argv(server, engine_argv, env, model_path, port, runtime_name)))
