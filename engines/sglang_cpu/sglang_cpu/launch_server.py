"""``python -m sglang_cpu.launch_server ARGS``: SGLang's ``python -m sglang.launch_server ARGS``, with one platform
fact said differently, ``has_amx=True``, so that ``--attention-backend intel_amx`` is kept on a CPU without AMX.

Why: SGLang 0.5.23's ``torch_native`` attention backend cannot verify speculative drafts (it has no tree mask), and
``srt/arg_groups/overrides.py::_attention_backend_platform_fallbacks`` turns ``intel_amx`` into ``torch_native``
when ``get_platform().has_amx`` is False. The ``intel_amx`` backend's two attention ops are real in the stand-in
``sgl_kernel`` beside this package, so the fallback is not needed.

What the override reaches, read in SGLang 0.5.23: ``get_platform().has_amx`` is read in two places, that fallback
and ``arg_groups/model_overrides/gpt_oss.py``, for GPT-OSS models only (their default attention backend when none is
given, and whether their MoE runner may default to ``triton_kernels``: pass both explicitly for GPT-OSS). Everything
that picks a kernel (linear, MoE, norms, rotary, KV store) calls ``cpu_has_amx_support()`` directly, which stays
False because the stand-in defines no ``convert_weight_packed``, so the layers still run SGLang's torch fallbacks.
The override is installed in the launching process, which resolves the server arguments once and hands the
resolved record to the scheduler processes.

Run with ``engines/sglang_cpu`` on ``sys.path`` (``PYTHONPATH``, or the ``.pth`` file in SGLang's venv) and
``SGLANG_USE_CPU_ENGINE=1``.
"""

from __future__ import annotations

import runpy
import sys


def main(argv: list[str]) -> None:
    """Run ``sglang.launch_server`` as ``__main__`` with ``argv`` (its own arguments, without a program name)."""
    from sglang.srt.runtime_context import override_platform

    override_platform(has_amx=True).install()
    sys.argv = ["sglang.launch_server", *argv]
    # alter_sys: sys.argv[0] and sys.modules["__main__"] become the module's, exactly as with `python -m`
    runpy.run_module("sglang.launch_server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
