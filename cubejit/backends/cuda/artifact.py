"""What the CUDA backend compiles, stores and loads: a cubin and what a launch needs of it.

A stored artifact is bytes (the cubin) plus JSON-able metadata (the entry point, the
architecture, the parameter slots, the coarsening of the kernel's no-alias form), in a versioned
format: a store may come from another machine, so nothing here is ever unpickled, and metadata of
another format is refused rather than guessed at.
"""

from __future__ import annotations

from dataclasses import dataclass

from cubejit.ir.nodes import KernelIR
from cubejit.ir.types import SCALARS
from cubejit.runtime.layout import ParamSlot, SlotKind, kernel_slots

__all__ = ["ENTRY_POINT", "FORMAT", "CudaArtifact", "ParamSlot", "param_slots"]

FORMAT = 3
"""The version of the stored metadata. Format 2 (before tensors) is still read; a stored entry
of another version is not loaded."""

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

    def metadata(self) -> dict[str, object]:
        """Everything but the cubin, as JSON-able values."""
        return {
            "format": FORMAT,
            "entry": self.entry,
            "arch": self.arch,
            "params": [s.to_json() for s in self.params],
            "coarsening": self.coarsening,
            "dynamic_shared": self.dynamic_shared,
        }

    @classmethod
    def from_stored(cls, payload: bytes, meta: dict[str, object]) -> CudaArtifact:
        """The artifact :meth:`metadata` and ``cubin`` describe. Raises ``ValueError`` for
        metadata of another format or a payload that is no cubin."""
        version = meta.get("format")
        if version not in (2, FORMAT):
            raise ValueError(f"CUDA artifact format {version!r}, expected {FORMAT}")
        if not payload.startswith(ELF_MAGIC):
            raise ValueError("stored CUDA artifact is not an ELF image")
        params = meta["params"]
        if not isinstance(params, list):
            raise ValueError("stored CUDA artifact has no parameter list")
        read = ParamSlot.from_json if version == FORMAT else _second_format
        return cls(
            cubin=bytes(payload),
            entry=str(meta["entry"]),
            arch=str(meta["arch"]),
            params=tuple(read(item) for item in params),
            coarsening=int(meta["coarsening"]),  # type: ignore[call-overload]
            dynamic_shared=int(meta.get("dynamic_shared", 0)),  # type: ignore[call-overload]
        )


def _second_format(item: object) -> ParamSlot:
    """A slot of format 2: ``[name, scalar, is_array, written]``."""
    if not isinstance(item, list) or len(item) != 4 or str(item[1]) not in SCALARS:
        raise ValueError(f"stored CUDA parameter {item!r} is malformed")
    name, scalar, is_array, written = item
    kind = SlotKind.ARRAY if is_array else SlotKind.SCALAR
    return ParamSlot(str(name), SCALARS[str(scalar)], kind, 0, bool(written))
