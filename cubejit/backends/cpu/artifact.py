"""What a CPU compile produces, in the form a store keeps: bytes and a small JSON-able dict.

The shared object's bytes are kept as they are; everything else a launch needs (the entry
symbol, the parameter slots) goes into :meth:`CpuArtifact.metadata`, which names its format
version. No ``pickle``: a store may come from another machine, and :meth:`from_parts` checks
what it reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cubejit.ir.types import SCALARS
from cubejit.runtime.layout import ParamSlot, SlotKind

FORMAT = 2
"""The version of :meth:`CpuArtifact.metadata`. Format 1 (before tensors, and without the
written flags) is still read; another is refused."""


@dataclass(frozen=True, slots=True)
class CpuArtifact:
    """A compiled CPU kernel: a shared object exporting :attr:`entry`."""

    library: bytes
    """The shared object, as the C compiler wrote it."""
    entry: str
    """The launch entry's symbol."""
    layout: tuple[ParamSlot, ...]
    """The parameters a launch passes, in signature order."""

    def metadata(self) -> dict[str, Any]:
        """Everything but the library, as JSON-able values."""
        return {
            "format": FORMAT,
            "entry": self.entry,
            "layout": [slot.to_json() for slot in self.layout],
        }

    @classmethod
    def from_parts(cls, library: bytes, metadata: dict[str, Any]) -> CpuArtifact:
        """The artifact :meth:`metadata` and ``library`` describe; ValueError when the
        metadata is not of this format."""
        version = metadata.get("format")
        if version not in (1, FORMAT):
            raise ValueError(f"CPU artifact format {version!r}, not {FORMAT}")
        entry = metadata.get("entry")
        layout = metadata.get("layout")
        if not isinstance(entry, str) or not isinstance(layout, list):
            raise ValueError("CPU artifact metadata lacks its entry or layout")
        read = ParamSlot.from_json if version == FORMAT else _first_format
        return cls(bytes(library), entry, tuple(read(item) for item in layout))


def _first_format(item: object) -> ParamSlot:
    """A slot of format 1: ``[name, "array" | "scalar", scalar]``, written flags unknown (so
    taken as not written: the artifact was compiled before writeability was checked)."""
    if (
        not isinstance(item, list)
        or len(item) != 3
        or not all(isinstance(x, str) for x in item)
        or item[1] not in ("array", "scalar")
        or item[2] not in SCALARS
    ):
        raise ValueError(f"CPU artifact layout entry {item!r} is malformed")
    return ParamSlot(item[0], SCALARS[item[2]], SlotKind(item[1]))
