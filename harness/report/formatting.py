"""How the report spells a value: the Jinja filters the templates format with.

Every filter takes the value as the context holds it, ``None`` included, and writes ``–`` for a figure that is
absent, so that a template never guards a value before formatting it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.analysis.cost_levers import LectureClaim

MISSING = "–"
"""What a table cell shows for a figure the run does not have."""
HASH_SHOWN = 16
"""Hex digits of a sha256 the report shows: enough to tell two apart, short enough for a table."""


def fmt(value: float | int | None, digits: int = 1) -> str:
    """A number with thousands separators; a float with ``digits`` decimals, an int as it is."""
    if value is None:
        return MISSING
    return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"


def fmt_all(values: Sequence[float] | None, digits: int = 1) -> str:
    """Several numbers, comma-separated (per-position acceptance); ``–`` when there are none."""
    return MISSING if values is None else ", ".join(fmt(v, digits) for v in values)


def usd(value: float | None) -> str:
    """Dollars with enough digits that small per-token costs stay readable."""
    if value is None:
        return MISSING
    if value >= 1:
        return f"${value:,.2f}"
    return f"${value:.3f}" if value >= 0.01 else f"${value:.3g}"


def pct(value: float | None) -> str:
    """A signed percentage change (-40.2 -> -40%)."""
    return MISSING if value is None else f"{value:+.0f}%"


def pct_plain(fraction: float | None) -> str:
    """A fraction as a percentage (0.634 -> 63.4%)."""
    return MISSING if fraction is None else f"{fraction * 100:.1f}%"


def times(ratio: float | None, digits: int = 2) -> str:
    """A ratio as a multiple (1.234 -> 1.23×); ``–`` when there is none, or it is zero (nothing to compare)."""
    return f"{fmt(ratio, digits)}×" if ratio else MISSING


def interval(bounds: tuple[float, float] | None, digits: int = 1) -> str:
    """A confidence interval as ``[low, high]``."""
    return MISSING if bounds is None else f"[{fmt(bounds[0], digits)}, {fmt(bounds[1], digits)}]"


def pct_range(bounds: tuple[float, float] | None) -> str:
    """An interval of percentage changes, ``[-38%, -22%]``."""
    return MISSING if bounds is None else f"[{pct(bounds[0])}, {pct(bounds[1])}]"


def claim(lecture_claim: LectureClaim | None) -> str:
    """A published claim of the capstone lecture with its range: an input, quoted beside what was measured."""
    if lecture_claim is None:
        return MISSING
    return f"{lecture_claim.text}: {pct(lecture_claim.lo_pct)} to {pct(lecture_claim.hi_pct)}"


def link(text: str, anchor: str) -> str:
    """``text`` as a link to the appendix table with id ``anchor``: every number the narrative states is one. A
    missing figure (``–``) links nowhere."""
    return text if text == MISSING else f"[{text}](#{anchor})"


def many(count: int, singular: str, plural: str | None = None) -> str:
    """A count with its noun: ``1 cell``, ``3 cells``, ``3 launches`` (``plural`` where adding an s is wrong)."""
    return f"{count:,} {singular if count == 1 else plural or singular + 's'}"


def span(bounds: tuple[float, float] | None, up: str, down: str, digits: int = 0) -> str:
    """A range of signed percentages in words, ``up`` for positive and ``down`` for negative: ``12% to 30% cheaper``,
    ``3% to 8% dearer``, ``from 5% dearer to 12% cheaper``; one value when both ends round alike."""
    if bounds is None:
        return MISSING
    lo, hi = sorted(bounds)
    a, b = f"{abs(lo):.{digits}f}%", f"{abs(hi):.{digits}f}%"
    if lo >= 0:
        return f"{a} {up}" if a == b else f"{a} to {b} {up}"
    if hi <= 0:
        return f"{b} {down}" if a == b else f"{b} to {a} {down}"
    return f"from {a} {down} to {b} {up}"


def than(pct_change: float | None, up: str = "more", down: str = "less") -> str:
    """A signed percentage as a comparison: ``22% more``, ``3% less``, or ``the same to the nearest percent``."""
    if pct_change is None:
        return MISSING
    if round(pct_change) == 0:
        return "the same to the nearest percent"
    return f"{abs(pct_change):.0f}% {up if pct_change > 0 else down}"


def fmt_range(bounds: tuple[float, float] | None, digits: int = 1, suffix: str = "") -> str:
    """Two figures as a range, ``1.2-1.4×``; one when both ends round alike."""
    if bounds is None:
        return MISSING
    lo, hi = fmt(bounds[0], digits), fmt(bounds[1], digits)
    return f"{lo}{suffix}" if lo == hi else f"{lo}–{hi}{suffix}"


def short_hash(digest: str | None) -> str:
    """The first ``HASH_SHOWN`` hex digits of a sha256."""
    return MISSING if digest is None else digest[:HASH_SHOWN]


FILTERS: dict[str, Callable[..., Any]] = {
    "fmt": fmt, "fmt_all": fmt_all, "usd": usd, "pct": pct, "pct_range": pct_range, "pct_plain": pct_plain,
    "times": times, "interval": interval, "claim": claim, "short_hash": short_hash, "link": link, "many": many,
    "span": span, "than": than, "fmt_range": fmt_range,
}
"""The filters every report template may use, by name."""
