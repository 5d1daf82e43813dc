"""The two ``torch.cpu`` functions SGLang's expert distribution recorder calls on its device module, which torch's
CPU module does not define.

SGLang 0.5.23's recorder (``srt/eplb/expert_distribution.py``) asks ``torch.get_device_module()`` whether a CUDA
graph is being captured (``is_current_stream_capturing``, at every forward while recording) and empties the device
cache before its first dump (``empty_cache``). On a CPU the device module is ``torch.cpu``, which has neither, so
the scheduler died at its first forward with ``--expert-distribution-recorder-mode`` set. On a CPU the answers are
plain: no stream is ever being captured, and there is no caching allocator to empty. ``install`` adds only what is
missing (a torch that defines them keeps its own) and runs when this package is imported, which SGLang's
``intel_amx`` attention backend does in every scheduler before the first forward.
"""

from __future__ import annotations

import torch


def is_current_stream_capturing() -> bool:
    """A CPU has no stream to capture into a graph."""
    return False


def empty_cache() -> None:
    """A CPU has no caching allocator whose blocks could be given back."""


def install() -> list[str]:
    """Add the missing functions to ``torch.cpu``; returns the names added."""
    added = []
    for function in (is_current_stream_capturing, empty_cache):
        if not hasattr(torch.cpu, function.__name__):
            setattr(torch.cpu, function.__name__, function)
            added.append(function.__name__)
    return added
