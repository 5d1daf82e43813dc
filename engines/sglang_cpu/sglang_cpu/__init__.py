"""The harness's CPU launcher for the real SGLang server (``python -m sglang_cpu.launch_server``), kept apart from
the ``sgl_kernel`` stand-in beside it: importing this package imports neither SGLang nor the stand-in."""
