"""How the ``cubejit`` command writes: one rich console, sizes and durations for people.

Tables and progress bars are rich's. When the output is not a terminal, rich writes plain text
(no colours, no live redraws) and the width is widened so that tables stay one row a line.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence

from rich.console import Console
from rich.table import Table

_PLAIN_WIDTH = 140
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def console(stderr: bool = False) -> Console:
    """A console on stdout (or stderr): rich on a terminal, plain and wide otherwise."""
    stream = sys.stderr if stderr else sys.stdout
    terminal = stream.isatty()
    return Console(
        file=stream,
        highlight=False,
        width=None if terminal else _PLAIN_WIDTH,
        color_system="auto" if terminal else None,
        soft_wrap=not terminal,
    )


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> Table:
    """A table of ``rows`` under ``columns``; numbers right-aligned by the caller's text."""
    result = Table(title=title, title_justify="left", header_style="bold")
    for column in columns:
        result.add_column(column, overflow="fold")
    for row in rows:
        result.add_row(*(str(cell) for cell in row))
    return result


def size_text(count: float) -> str:
    """``count`` bytes as ``12.3 MiB``."""
    if count < 1024:
        return f"{count:.0f} B"
    for unit in ("KiB", "MiB"):
        count /= 1024
        if count < 1024:
            return f"{count:.1f} {unit}"
    return f"{count / 1024:.1f} GiB"


def parse_size(text: str) -> int:
    """``500M``, ``2GiB``, ``1.5g``, ``4096`` as bytes (powers of 1024). Raises
    :class:`ValueError` naming the text otherwise."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size; write e.g. 500M, 2G or 4096")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def seconds_text(seconds: float) -> str:
    """A duration for people: ``1.23 s``, ``45.6 ms``, ``78 µs``."""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"
