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

FORMAT = 1
"""The version of :meth:`CpuArtifact.metadata`; another is refused. Tensors and the written
buffers were added within it, so that a cubejit of before reads the artifacts of kernels
without tensors as it always did: a tensor's slot has a fourth field (its rank), and
``written`` (absent before) names the buffers the kernel stores into."""


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
            "layout": [
                [s.name, s.kind.value, s.scalar.name, *([s.rank] if s.is_tensor else [])]
                for s in self.layout
            ],
            "written": [s.name for s in self.layout if s.written],
        }

    @classmethod
    def from_parts(cls, library: bytes, metadata: dict[str, Any]) -> CpuArtifact:
        """The artifact :meth:`metadata` and ``library`` describe; ValueError when the
        metadata is not of this format."""
        if metadata.get("format") != FORMAT:
            raise ValueError(f"CPU artifact format {metadata.get('format')!r}, not {FORMAT}")
        entry = metadata.get("entry")
        layout = metadata.get("layout")
        written = metadata.get("written", [])
        if not isinstance(entry, str) or not isinstance(layout, list):
            raise ValueError("CPU artifact metadata lacks its entry or layout")
        if not isinstance(written, list) or not all(isinstance(w, str) for w in written):
            raise ValueError(f"CPU artifact metadata names written buffers {written!r}")
        return cls(bytes(library), entry, tuple(_slot(item, written) for item in layout))


def _slot(item: object, written: list[str]) -> ParamSlot:
    """A slot of the layout: ``[name, "array" | "scalar", scalar]`` or
    ``[name, "tensor", scalar, rank]``."""
    if (
        not isinstance(item, list)
        or len(item) not in (3, 4)
        or not all(isinstance(x, str) for x in item[:3])
        or item[1] not in ("array", "scalar", "tensor")
        or item[2] not in SCALARS
        or (len(item) == 4) != (item[1] == "tensor")
        or (len(item) == 4 and (type(item[3]) is not int or item[3] < 1))
    ):
        raise ValueError(f"CPU artifact layout entry {item!r} is malformed")
    rank = item[3] if len(item) == 4 else 0
    return ParamSlot(item[0], SCALARS[item[2]], SlotKind(item[1]), rank, item[0] in written)
