"""What a CPU compile produces, in the form a store keeps: bytes and a small JSON-able dict.

The shared object's bytes are kept as they are; everything else a launch needs (the entry
symbol, the argument layout) goes into :meth:`CpuArtifact.metadata`, which names its format
version. No ``pickle``: a store may come from another machine, and :meth:`from_parts` checks
what it reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FORMAT = 1
"""The version of :meth:`CpuArtifact.metadata`; a different one is refused."""

_KINDS = ("array", "scalar")


@dataclass(frozen=True, slots=True)
class CpuArtifact:
    """A compiled CPU kernel: a shared object exporting :attr:`entry`."""

    library: bytes
    """The shared object, as the C compiler wrote it."""
    entry: str
    """The launch entry's symbol."""
    layout: tuple[tuple[str, str, str], ...]
    """``(name, "array" | "scalar", scalar type)`` per parameter, in signature order."""

    def metadata(self) -> dict[str, Any]:
        """Everything but the library, as JSON-able values."""
        return {"format": FORMAT, "entry": self.entry, "layout": [list(p) for p in self.layout]}

    @classmethod
    def from_parts(cls, library: bytes, metadata: dict[str, Any]) -> CpuArtifact:
        """The artifact :meth:`metadata` and ``library`` describe; ValueError when the
        metadata is not of this format."""
        if metadata.get("format") != FORMAT:
            raise ValueError(f"CPU artifact format {metadata.get('format')!r}, not {FORMAT}")
        entry = metadata.get("entry")
        layout = metadata.get("layout")
        if not isinstance(entry, str) or not isinstance(layout, list):
            raise ValueError("CPU artifact metadata lacks its entry or layout")
        params = []
        for item in layout:
            if (
                not isinstance(item, list)
                or len(item) != 3
                or not all(isinstance(x, str) for x in item)
                or item[1] not in _KINDS
            ):
                raise ValueError(f"CPU artifact layout entry {item!r} is malformed")
            params.append((item[0], item[1], item[2]))
        return cls(bytes(library), entry, tuple(params))
