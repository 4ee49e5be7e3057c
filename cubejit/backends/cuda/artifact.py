"""What the CUDA backend compiles, stores and loads: a cubin and what a launch needs of it.

A stored artifact is bytes (the cubin) plus JSON-able metadata (the entry point, the
architecture, the parameter slots, the coarsening of the kernel's no-alias form), in a versioned
format: a store may come from another machine, so nothing here is ever unpickled, and metadata of
another format is refused rather than guessed at.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace

from cubejit.ir.nodes import KernelIR
from cubejit.ir.types import SCALARS
from cubejit.runtime.layout import ParamSlot, SlotKind, kernel_slots

__all__ = ["ENTRY_POINT", "FORMAT", "CudaArtifact", "ParamSlot", "param_slots"]

FORMAT = 2
"""The version of the stored metadata; a stored entry of another version is not loaded. Tensors
and packs were added within it, so that a cubejit of before reads the artifacts of kernels
without tensors as it always did: a parameter is ``[name, scalar, is_array, written]``, a tensor
``[name, scalar, "tensor", written, rank]``, and ``pack`` (absent before) names the cubin shared
with a batch's other kernels."""

ENTRY_POINT = "cubejit_kernel"
"""The symbol of every kernel's ``__global__`` function. Fixed, so two kernels whose text is
the same compile to the same cubin whatever their names."""

ELF_MAGIC = b"\x7fELF"


def param_slots(ir: KernelIR) -> tuple[ParamSlot, ...]:
    """The launch layout of ``ir``'s parameters, in signature order (the one layout of every
    backend, :mod:`cubejit.runtime.layout`)."""
    return kernel_slots(ir)


@dataclass(frozen=True, slots=True)
class CudaArtifact:
    """A kernel compiled for one architecture, ready for ``cuModuleLoadData``."""

    cubin: bytes
    """The ELF image NVRTC produced."""
    entry: str
    """The symbol of the kernel's ``__global__`` function."""
    arch: str
    """The architecture the cubin was built for (``sm_90a``)."""
    params: tuple[ParamSlot, ...]
    """The parameters a launch passes, in order."""
    coarsening: int = 1
    """Cubes along x per CUDA block in the kernel's no-alias form (the variant
    :data:`~cubejit.backends.cuda.coarsening.NO_ALIAS`), whichever variant this artifact is; 1
    when that form is the plain one, so a launch need not check its arguments for overlap. A
    no-alias artifact with more takes the user's cube count along x as a last parameter."""
    dynamic_shared: int = 0
    """Bytes of dynamic shared memory every launch passes (a kernel whose shared buffers are
    past 48 KiB); the load opts the function in to that much."""
    ptx: bytes = b""
    """The PTX the cubin was assembled from (kept beside it in the store), for a GPU newer
    than the cubin's architecture; empty when unknown or still packed. An artifact with no
    cubin but PTX is compiled by the driver when loaded."""
    packed_ptx: bytes = b""
    """The PTX as the store keeps it, compressed with ``zlib``, where it was read from the
    store and not yet needed: a warm load uses the cubin alone, so its PTX stays packed (see
    :meth:`ptx_text`)."""
    pack: str | None = None
    """The SHA-256 of :attr:`cubin` when it holds the other kernels of its batch too (a pack,
    linked by the driver): the module is loaded once for all of them. Each kernel's PTX is
    kept apart, beside its source, for a GPU newer than the pack's."""
    relocatable: bool = False
    """Whether :attr:`cubin` is relocatable code that only linking makes loadable (a part of
    a pack, before the link)."""

    def ptx_text(self) -> bytes:
        """The PTX, unpacked if it came from the store packed; empty when unknown."""
        return self.ptx or (zlib.decompress(self.packed_ptx) if self.packed_ptx else b"")

    def with_ptx_unpacked(self) -> CudaArtifact:
        """This artifact with its PTX unpacked: equal to the one compiled before it was
        stored."""
        if not self.packed_ptx:
            return self
        return replace(self, ptx=self.ptx_text(), packed_ptx=b"")

    def portable(self) -> bool:
        """Whether it was built for an architecture a newer GPU's driver can compile PTX of:
        not one architecture's own instructions (``sm_90a``, ``sm_100f``)."""
        return self.arch[-1:].isdigit()

    def portable_ptx(self) -> bool:
        """Whether a newer GPU's driver can compile the PTX: there is some, and it is
        :meth:`portable`."""
        return bool(self.ptx or self.packed_ptx) and self.portable()

    def metadata(self) -> dict[str, object]:
        """Everything but the cubin, as JSON-able values."""
        metadata: dict[str, object] = {
            "format": FORMAT,
            "entry": self.entry,
            "arch": self.arch,
            "params": [_stored_slot(s) for s in self.params],
            "coarsening": self.coarsening,
            "dynamic_shared": self.dynamic_shared,
        }
        return metadata if self.pack is None else {**metadata, "pack": self.pack}

    @classmethod
    def from_stored(
        cls, payload: bytes, meta: dict[str, object], ptx: bytes = b"", packed_ptx: bytes = b""
    ) -> CudaArtifact:
        """The artifact :meth:`metadata` and ``cubin`` describe, with its ``ptx`` (or
        ``packed_ptx``). Raises ``ValueError`` for metadata of another format or a payload that
        is no cubin."""
        if meta.get("format") != FORMAT:
            raise ValueError(f"CUDA artifact format {meta.get('format')!r}, expected {FORMAT}")
        if not payload.startswith(ELF_MAGIC):
            raise ValueError("stored CUDA artifact is not an ELF image")
        params = meta["params"]
        pack = meta.get("pack")
        if not isinstance(params, list):
            raise ValueError("stored CUDA artifact has no parameter list")
        if pack is not None and not isinstance(pack, str):
            raise ValueError(f"stored CUDA artifact names the pack {pack!r}")
        return cls(
            cubin=bytes(payload),
            entry=str(meta["entry"]),
            arch=str(meta["arch"]),
            params=_read_slots(params),
            coarsening=int(meta["coarsening"]),  # type: ignore[call-overload]
            dynamic_shared=int(meta.get("dynamic_shared", 0)),  # type: ignore[call-overload]
            ptx=ptx,
            packed_ptx=packed_ptx,
            pack=pack,
        )


def _stored_slot(slot: ParamSlot) -> list[object]:
    if slot.is_tensor:
        return [slot.name, slot.scalar.name, "tensor", slot.written, slot.rank]
    return [slot.name, slot.scalar.name, slot.is_array, slot.written]


_slots_read: dict[str, tuple[ParamSlot, ...]] = {}
"""Each parameter list read, by its text: the specialisations of one kernel share theirs."""


def _read_slots(items: list[object]) -> tuple[ParamSlot, ...]:
    """The slots of a stored parameter list (see :func:`_read_slot`), read once."""
    key = repr(items)
    slots = _slots_read.get(key)
    if slots is None:
        slots = _slots_read[key] = tuple(_read_slot(item) for item in items)
    return slots


def _read_slot(item: object) -> ParamSlot:
    """A slot as :func:`_stored_slot` wrote it."""
    if not isinstance(item, list) or len(item) not in (4, 5) or str(item[1]) not in SCALARS:
        raise ValueError(f"stored CUDA parameter {item!r} is malformed")
    name, scalar, kind = str(item[0]), SCALARS[str(item[1])], item[2]
    if len(item) == 5:
        rank = item[4]
        if kind != "tensor" or type(rank) is not int or rank < 1:
            raise ValueError(f"stored CUDA parameter {item!r} is malformed")
        return ParamSlot(name, scalar, SlotKind.TENSOR, rank, bool(item[3]))
    slot_kind = SlotKind.ARRAY if kind is True else SlotKind.SCALAR
    return ParamSlot(name, scalar, slot_kind, 0, bool(item[3]))
