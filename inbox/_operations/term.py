"""Output for people: tables that fit the terminal, relative times, colour only on a TTY,
a progress bar. Machines get ``--json`` instead; nothing here is parsed back."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TextIO

__all__ = [
    "Cell",
    "Progress",
    "Style",
    "human_duration",
    "paint",
    "relative",
    "table",
    "use_colour",
]

Style = str  # "red", "yellow", "green", "dim", "bold"
Cell = str | tuple[str, Style | None]

_CODES = {"red": "31", "green": "32", "yellow": "33", "dim": "2", "bold": "1"}


def use_colour(stream: TextIO | None = None) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (no-color.org)."""
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def paint(text: str, style: Style | None, colour: bool) -> str:
    if not colour or not style or style not in _CODES:
        return text
    return f"\x1b[{_CODES[style]}m{text}\x1b[0m"


def human_duration(seconds: float) -> str:
    """``850 ms``, ``3.2 s``, ``4 min``, ``2.5 h``, ``3 d``."""
    seconds = abs(seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} d"


def relative(moment: datetime | None, now: datetime) -> str:
    """``3 min ago``, ``in 20 s``, ``just now``; ``-`` for no time."""
    if moment is None:
        return "-"
    delta: timedelta = now - moment
    seconds = delta.total_seconds()
    if abs(seconds) < 1:
        return "just now"
    text = human_duration(seconds)
    return f"{text} ago" if seconds > 0 else f"in {text}"


def _clip(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + "…" if width > 0 else ""


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    *,
    colour: bool,
    width: int | None = None,
    right: Sequence[int] = (),
) -> str:
    """Columns padded to their content; when the total passes ``width`` (default: the
    terminal's), the widest columns give way first (clipped with an ellipsis). Output that
    is not for a terminal (a pipe, a file) is never clipped, unless ``COLUMNS`` is set: a
    key copied from it must be the whole key."""
    if width is None and (sys.stdout.isatty() or "COLUMNS" in os.environ):
        width = shutil.get_terminal_size((120, 24)).columns
    plain = [[c if isinstance(c, str) else c[0] for c in row] for row in rows]
    styles = [[None if isinstance(c, str) else c[1] for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in plain:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text.replace("\n", " ")))
    gap = 2
    while width is not None and sum(widths) + gap * (len(widths) - 1) > width:
        widest = max(range(len(widths)), key=lambda i: widths[i])
        floor = max(len(headers[widest]), 6)
        if widths[widest] <= floor:
            break  # nothing left to give: let the terminal wrap
        widths[widest] -= 1

    def line(cells: Sequence[str], cell_styles: Sequence[Style | None]) -> str:
        out = []
        for i, text in enumerate(cells):
            text = _clip(text.replace("\n", " "), widths[i])
            padded = text.rjust(widths[i]) if i in right else text.ljust(widths[i])
            out.append(paint(padded, cell_styles[i], colour))
        return (" " * gap).join(out).rstrip()

    lines = [line(headers, ["bold"] * len(headers))]
    lines += [line(row, style) for row, style in zip(plain, styles, strict=True)]
    return "\n".join(lines)


class Progress:
    """A one-line progress bar on a terminal's stderr; silent when stderr is not a TTY."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None) -> None:
        self._total = max(total, 1)
        self._label = label
        self._stream = stream or sys.stderr
        self._active = hasattr(self._stream, "isatty") and self._stream.isatty()
        self._done = 0

    def advance(self, n: int) -> None:
        self._done += n
        if not self._active:
            return
        bar_width = 30
        filled = int(bar_width * self._done / self._total)
        percent = 100 * self._done / self._total
        self._stream.write(
            f"\r{self._label} [{'#' * filled}{'.' * (bar_width - filled)}]"
            f" {percent:3.0f}% {self._done}/{self._total}"
        )
        self._stream.flush()

    def close(self) -> None:
        if self._active:
            self._stream.write("\n")
            self._stream.flush()
