"""The argv that runs a server under nsys, and the one that exports its CSVs."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.profiling import NsysOptions, find_nsys, nsys_profile_argv, nsys_profile_launch, nsys_stats_argv

ENGINE = [".venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m", "--port", "8000",
          "--profiler-config", '{"profiler":"cuda"}']


def test_profile_argv_wraps_the_engine_with_the_capture_range_recipe(tmp_path: Path) -> None:
    out = tmp_path / "profiles" / "mx" / "cell" / "profile"
    argv = nsys_profile_argv(ENGINE, out)
    assert argv[:2] == ["nsys", "profile"]
    assert argv[-len(ENGINE):] == ENGINE  # the engine argv comes last, untouched
    flags = argv[2:-len(ENGINE)]
    for flag in ["--trace=cuda,nvtx,osrt", "--trace-fork-before-exec=true", "--cuda-graph-trace=node",
                 "--capture-range=cudaProfilerApi", "--capture-range-end=repeat", "--sample=none",
                 "--cpuctxsw=none", "--force-overwrite=true"]:
        assert flag in flags
    assert flags[flags.index("-o") + 1] == str(out)


def test_options_change_the_flags() -> None:
    opts = NsysOptions(executable="/opt/nsys/bin/nsys", trace=("cuda", "nvtx", "osrt", "cublas"),
                       capture_range_end="stop", extra_args=("--gpu-metrics-devices=all",))
    argv = nsys_profile_argv(["serve"], Path("p"), opts)
    assert argv[0] == "/opt/nsys/bin/nsys"
    assert "--trace=cuda,nvtx,osrt,cublas" in argv and "--capture-range-end=stop" in argv
    assert argv[-2:] == ["--gpu-metrics-devices=all", "serve"]


@pytest.mark.parametrize("bad", ["forever", "repeat:x", "stop;rm"])
def test_capture_range_end_is_checked(bad: str) -> None:
    with pytest.raises(ValidationError):
        NsysOptions(capture_range_end=bad)


def test_launch_keeps_the_engine_environment(tmp_path: Path) -> None:
    env = {"OMP_NUM_THREADS": "8", "VLLM_LOGGING_LEVEL": "INFO"}
    argv, launch_env = nsys_profile_launch(ENGINE, env, tmp_path / "profile")
    assert argv[-1] == ENGINE[-1] and launch_env == env and launch_env is not env


def test_stats_argv_exports_every_report_as_csv(tmp_path: Path) -> None:
    argv = nsys_stats_argv(tmp_path / "profile.nsys-rep", tmp_path / "stats")
    assert argv[:3] == ["nsys", "stats", "--force-export=true"]
    assert argv[argv.index("--report") + 1] == ("cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,"
                                                "nvtx_sum,cuda_api_sum")
    assert argv[argv.index("--format") + 1] == "csv"
    assert argv[argv.index("--output") + 1] == str(tmp_path / "stats")
    assert argv[-1] == str(tmp_path / "profile.nsys-rep")


def test_find_nsys_is_none_when_absent() -> None:
    assert find_nsys("no-such-nsys-binary-here") is None


def test_a_cpu_window_traces_os_calls_and_samples_stacks_between_a_delay_and_a_duration() -> None:
    argv = nsys_profile_argv(["serve"], Path("p"), NsysOptions.cpu_window(45, 20, "/b/nsys"))
    flags = argv[2:-1]
    assert argv[:2] == ["/b/nsys", "profile"] and argv[-1] == "serve"
    for flag in ["--trace=osrt,nvtx", "--sample=process-tree", "--backtrace=fp", "--cpuctxsw=none", "--delay=45",
                 "--duration=20"]:
        assert flag in flags
    # nothing of the GPU recipe: no CUDA profiler API opens a range on a CPU, and there are no graphs to trace
    assert not [f for f in flags if f.startswith(("--capture-range", "--cuda-graph", "--trace-fork"))]


def test_a_cpu_window_without_sampling_records_os_calls_only() -> None:
    flags = nsys_profile_argv(["serve"], Path("p"), NsysOptions.cpu_window(45, 20, "/b/nsys", sample=False))[2:-1]
    assert "--sample=none" in flags and "--trace=osrt,nvtx" in flags
    assert not [f for f in flags if f.startswith("--backtrace")]  # no samples, nothing to unwind


def test_the_bundled_nsys_is_found_when_none_is_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import harness.profiling.nsys as nsys_module

    bundled = tmp_path / "usr" / "bin" / "nsys"
    bundled.parent.mkdir(parents=True)
    bundled.write_text("")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(nsys_module, "BUNDLED", bundled)
    assert find_nsys() == str(bundled)
    assert find_nsys("other-nsys") is None  # an executable the user named is looked up as named
