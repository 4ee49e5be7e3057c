"""What the CUDA backend compiles, stores and loads: a cubin and what a launch needs of it.

A stored artifact is bytes (the cubin) plus JSON-able metadata (the entry point, the
architecture, the parameter layout, the coarsening of the kernel's no-alias form), in a versioned
format: a store may come from another
machine, so nothing here is ever unpickled, and metadata of another format is refused rather
than guessed at.
"""

from __future__ import annotations

from dataclasses import dataclass

from cubejit.backends.cuda.coarsening import written_arrays
from cubejit.ir.nodes import KernelIR
from cubejit.ir.types import SCALARS, ArrayType, Scalar

FORMAT = 2
"""The version of the stored metadata; a stored entry of another version is not loaded."""

ENTRY_POINT = "cubejit_kernel"
"""The symbol of every kernel's ``__global__`` function. Fixed, so two kernels whose text is
the same compile to the same cubin whatever their names."""

ELF_MAGIC = b"\x7fELF"


@dataclass(frozen=True, slots=True)
class ParamSlot:
    """One kernel parameter as a launch passes it: a scalar by value, or an array as a device
    pointer followed by its length (``u32``)."""

    name: str
    """The parameter's name in the kernel's signature (for messages)."""
    scalar: Scalar
    """The scalar's type, or the array's element type."""
    is_array: bool
    """Whether the parameter is an array."""
    written: bool = False
    """Whether the kernel stores to it (an array): a launch checks that such an array overlaps
    no other before it takes the no-alias variant."""

    def describe(self) -> str:
        """The type as the kernel language spells it."""
        return f"Array[{self.scalar.name}]" if self.is_array else self.scalar.name


def param_slots(ir: KernelIR) -> tuple[ParamSlot, ...]:
    """The launch layout of ``ir``'s parameters, in signature order."""
    slots = []
    written = written_arrays(ir)
    for p in ir.params:
        if isinstance(p.type, ArrayType):
            slots.append(ParamSlot(p.name, p.type.elem, True, p.name in written))
        else:
            slots.append(ParamSlot(p.name, p.type, False))
    return tuple(slots)


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
    ptx: bytes = b""
    """The PTX the cubin was assembled from (kept beside it in the store), for a GPU newer
    than the cubin's architecture; empty when unknown. An artifact with no cubin but PTX is
    compiled by the driver when loaded."""

    def portable_ptx(self) -> bool:
        """Whether a newer GPU's driver can compile :attr:`ptx`: there is some, and it was not
        made for one architecture's own instructions (``sm_90a``, ``sm_100f``)."""
        return bool(self.ptx) and self.arch[-1:].isdigit()

    def metadata(self) -> dict[str, object]:
        """Everything but the cubin, as JSON-able values."""
        return {
            "format": FORMAT,
            "entry": self.entry,
            "arch": self.arch,
            "params": [[s.name, s.scalar.name, s.is_array, s.written] for s in self.params],
            "coarsening": self.coarsening,
        }

    @classmethod
    def from_stored(cls, payload: bytes, meta: dict[str, object]) -> CudaArtifact:
        """The artifact :meth:`metadata` and ``cubin`` describe. Raises ``ValueError`` for
        metadata of another format or a payload that is no cubin."""
        if meta.get("format") != FORMAT:
            raise ValueError(f"CUDA artifact format {meta.get('format')!r}, expected {FORMAT}")
        if not payload.startswith(ELF_MAGIC):
            raise ValueError("stored CUDA artifact is not an ELF image")
        params = meta["params"]
        if not isinstance(params, list):
            raise ValueError("stored CUDA artifact has no parameter list")
        return cls(
            cubin=bytes(payload),
            entry=str(meta["entry"]),
            arch=str(meta["arch"]),
            params=tuple(
                ParamSlot(str(n), SCALARS[str(t)], bool(a), bool(w)) for n, t, a, w in params
            ),
            coarsening=int(meta["coarsening"]),  # type: ignore[call-overload]
        )
