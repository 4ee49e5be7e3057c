"""What a CPU compile produces, in the form a store keeps: bytes and a small JSON-able dict.

The shared object's bytes are kept as they are; everything else a launch needs (the entry
symbol, the parameter slots) goes into :meth:`CpuArtifact.metadata`, which names its format
version. No ``pickle``: a store may come from another machine, and :meth:`from_parts` checks
what it reads. The kernels a batch compiled share one shared object, a *pack*, each with an
entry of its own: their artifacts hold the same library, named by :attr:`CpuArtifact.pack`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cubejit.ir.types import SCALARS
from cubejit.runtime.layout import ParamSlot, SlotKind

FORMAT = 1
"""The version of :meth:`CpuArtifact.metadata`; another is refused. Tensors, the written
buffers and packs were added within it, so that a cubejit of before reads the artifacts of
kernels without tensors as it always did: a tensor's slot has a fourth field (its rank),
``written`` (absent before) names the buffers the kernel stores into, and ``pack`` (absent
before) the library shared with other kernels."""


@dataclass(frozen=True, slots=True)
class CpuPart:
    """A kernel compiled to an object file, which linking makes loadable."""

    object: bytes
    """The object file, its entry renamed to the artifact's :attr:`CpuArtifact.entry`."""
    libraries: tuple[str, ...]
    """The linker flags it needs (see :func:`~cubejit.backends.cpu.vector_math.link_libraries`)."""


@dataclass(frozen=True, slots=True)
class CpuArtifact:
    """A compiled CPU kernel: a shared object exporting :attr:`entry`."""

    library: bytes
    """The shared object, as the C compiler wrote it."""
    entry: str
    """The launch entry's symbol."""
    layout: tuple[ParamSlot, ...]
    """The parameters a launch passes, in signature order."""
    pack: str | None = None
    """The SHA-256 of :attr:`library` when it holds other kernels too (a pack): the library
    is loaded once for all of them."""
    part: CpuPart | None = None
    """The object file, before linking (then :attr:`library` is empty)."""

    def metadata(self) -> dict[str, Any]:
        """Everything but the library, as JSON-able values."""
        metadata = {
            "format": FORMAT,
            "entry": self.entry,
            "layout": [
                [s.name, s.kind.value, s.scalar.name, *([s.rank] if s.is_tensor else [])]
                for s in self.layout
            ],
            "written": [s.name for s in self.layout if s.written],
        }
        return metadata if self.pack is None else {**metadata, "pack": self.pack}

    @classmethod
    def from_parts(cls, library: bytes, metadata: dict[str, Any]) -> CpuArtifact:
        """The artifact :meth:`metadata` and ``library`` describe; ValueError when the
        metadata is not of this format."""
        if metadata.get("format") != FORMAT:
            raise ValueError(f"CPU artifact format {metadata.get('format')!r}, not {FORMAT}")
        entry = metadata.get("entry")
        layout = metadata.get("layout")
        written = metadata.get("written", [])
        pack = metadata.get("pack")
        if not isinstance(entry, str) or not isinstance(layout, list):
            raise ValueError("CPU artifact metadata lacks its entry or layout")
        if not isinstance(written, list) or not all(isinstance(w, str) for w in written):
            raise ValueError(f"CPU artifact metadata names written buffers {written!r}")
        if pack is not None and not isinstance(pack, str):
            raise ValueError(f"CPU artifact metadata names the pack {pack!r}")
        return cls(bytes(library), entry, _layout(layout, written), pack)


_layouts: dict[str, tuple[ParamSlot, ...]] = {}
"""Each layout read, by its text: the specialisations of one kernel share theirs."""


def _layout(layout: list[Any], written: list[str]) -> tuple[ParamSlot, ...]:
    """The slots ``layout`` and ``written`` describe (see :func:`_slot`), read once."""
    key = repr((layout, written))
    slots = _layouts.get(key)
    if slots is None:
        slots = _layouts[key] = tuple(_slot(item, written) for item in layout)
    return slots


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
