"""One PNG, drawn headless: the matplotlib set-up and tear-down every plot of the report shares.

matplotlib is imported only when a figure is drawn, with the Agg backend (reports are rendered on servers and in
CI, with no display); a missing matplotlib raises ImportError, which callers turn into "tables only".
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def png(path: Path, *, ncols: int = 1, figsize: tuple[float, float] = (7.5, 4.8)) -> Iterator[Any]:
    """Yield the axes of a new figure (one, or an array of ``ncols``); on exit lay it out and save it to ``path``.
    The figure is closed however the block ends."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=figsize, dpi=110)
    try:
        yield axes
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
