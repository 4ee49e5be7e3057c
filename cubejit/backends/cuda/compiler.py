"""The CUDA half of compilation that runs on any thread: IR to CUDA C++, NVRTC to a cubin.

:class:`CudaCompiler` is an :class:`~cubejit.compile.protocols.ArtifactCompiler`. It holds no
device: the architecture and the limits to validate against are given, so a machine without a
GPU builds cubins for any architecture NVRTC knows (the tests build for ``sm_80`` and
``sm_90``). Lowering validates and prints; finalizing runs NVRTC, which releases the GIL, so
the loader's workers compile side by side.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cubejit.backends.cuda import nvrtc
from cubejit.backends.cuda.artifact import ENTRY_POINT, CudaArtifact, ParamSlot, param_slots
from cubejit.backends.cuda.capabilities import cuda_capabilities
from cubejit.backends.cuda.coarsening import FACTOR, NO_ALIAS, coarsen
from cubejit.backends.cuda.driver import ARCHITECTURAL_LIMITS, CudaLimits
from cubejit.compile.id import ArtifactId
from cubejit.errors import BackendUnavailableError, UnsupportedError
from cubejit.ir.bounds import checked
from cubejit.ir.types import TensorType
from cubejit.runtime.checking import split_variant
from cubejit.runtime.layout import contiguity


@dataclass(frozen=True, slots=True)
class CudaLowered:
    """A kernel lowered to CUDA C++, not yet compiled."""

    source: str
    """The whole translation unit; nothing of the kernel's name or id is in it."""
    params: tuple[ParamSlot, ...]
    """The parameters a launch passes, in order."""
    needs_half: bool
    """Whether the source includes ``cuda_fp16.h`` / ``cuda_bf16.h``."""
    kernel: str
    """The kernel's name, for messages."""
    coarsening: int = 1
    """Cubes along x per CUDA block in the kernel's no-alias form (see
    :attr:`CudaArtifact.coarsening`)."""
    dynamic_shared: int = 0
    """Bytes of dynamic shared memory a launch passes (see
    :attr:`CudaArtifact.dynamic_shared`)."""


class CudaCompiler:
    """Lowers kernels to CUDA C++ and compiles them to cubins for ``arch``.

    Thread-safe: shared by every worker of a batch. ``compilations`` counts the NVRTC runs this
    compiler made, and ``on_compile``, when given, is called with each source it compiles.
    """

    def __init__(
        self,
        arch: str,
        limits: CudaLimits = ARCHITECTURAL_LIMITS,
        on_compile: Callable[[str], None] | None = None,
    ) -> None:
        self.arch = arch
        self.limits = limits
        self.capabilities = cuda_capabilities(limits)
        self.on_compile = on_compile
        self._lock = threading.Lock()
        self._compilations = 0

    def _check_architecture(self) -> None:
        """A :class:`BackendUnavailableError` when this NVRTC cannot build for the compiler's
        architecture: told at the first compile, not when a client starts (a warm client
        never loads NVRTC)."""
        major, minor = self.limits.compute_capability
        if (major, minor) == (0, 0):
            major, minor = capability(self.arch)
        if major * 10 + minor not in nvrtc.supported_architectures():
            nvrtc_major, nvrtc_minor = nvrtc.version()
            raise BackendUnavailableError(
                f"NVRTC {nvrtc_major}.{nvrtc_minor} cannot build code for {self.arch} "
                f"(compute capability {major}.{minor}, {self.limits.name}); install a newer "
                "nvidia-cuda-nvrtc"
            )

    @property
    def compilations(self) -> int:
        """How many times this compiler has run NVRTC."""
        return self._compilations

    def lower(self, kernel: Any, id: ArtifactId[Any], recording: Any, logger: Any) -> CudaLowered:
        """Validates ``kernel``'s cube_dim against the device, expands it to IR and prints
        it as CUDA C++ for variant ``id.variant`` (``None``, or
        :data:`~cubejit.backends.cuda.coarsening.NO_ALIAS` for the coarsened no-alias form; for a
        kernel with tensors, that and the contiguity mask of its tensors, ``(None | NO_ALIAS,
        mask)``, see :func:`~cubejit.runtime.layout.contiguity`; a checked variant of any,
        :mod:`cubejit.runtime.checking`), telling ``recording`` both.

        The validator and the C++ printer are imported here, at the first lowering, unless a
        client imported them while it waited for its device: a process the store serves
        entirely need not load them."""
        from cubejit.backends.cuda.cooperation import dynamic_shared_bytes
        from cubejit.backends.cuda.dialect import cuda_source, needs_half_headers
        from cubejit.ir.validate import validate_for

        where = f"{kernel.file}:{kernel.line}"
        has_tensors = any(isinstance(p.type, TensorType) for p in kernel.params)
        is_checked, variant = split_variant(id.variant)
        mask = None
        if has_tensors and isinstance(variant, tuple) and len(variant) == 2:
            variant, mask = variant
        if (variant is not None and variant is not NO_ALIAS) or has_tensors != (mask is not None):
            raise UnsupportedError(
                f"kernel {kernel.name} ({where}): CUDA variant {id.variant!r} is neither None "
                f"nor {NO_ALIAS!r} (a kernel with tensors: either with its contiguity mask)",
                kernel=kernel.name,
            )
        self.limits.check_cube_dim(kernel.cube_dim, kernel.name, where)
        ir = kernel.define(plane_dim=self.capabilities.plane_size)
        validate_for(ir, self.capabilities, kernel.cube_dim)
        recording.defined(str(ir))
        if is_checked:
            ir, _ = checked(ir)
        needs_half = needs_half_headers(ir)
        if needs_half and nvrtc.half_include_dir() is None:
            raise UnsupportedError(
                f"kernel {kernel.name} ({where}) uses f16 or bf16, which "
                f"need the CUDA headers cuda_fp16.h and cuda_bf16.h; install them with "
                f"pip install nvidia-cuda-runtime (or a CUDA toolkit)",
                kernel=kernel.name,
            )
        coarsened = coarsen(ir, kernel.cube_dim)
        try:
            contiguous = contiguity(ir, mask or 0)
        except ValueError as e:
            raise UnsupportedError(f"kernel {kernel.name} ({where}): {e}") from None
        source = cuda_source(ir, coarsened, no_alias=variant is NO_ALIAS, contiguous=contiguous)
        recording.source(source)
        factor = 1 if coarsened is None else FACTOR
        shared = dynamic_shared_bytes(ir)
        return CudaLowered(source, param_slots(ir), needs_half, kernel.name, factor, shared)

    @staticmethod
    def source(lowered: CudaLowered) -> str:
        """The C++ text: kernels that lower to the same text share one cubin."""
        return lowered.source

    def finalize(self, id: ArtifactId[Any], lowered: CudaLowered) -> CudaArtifact:
        """Compiles ``lowered`` with NVRTC to a cubin for this compiler's architecture."""
        cubin, ptx = self._compiled(lowered, ())
        return CudaArtifact(
            cubin,
            ENTRY_POINT,
            self.arch,
            lowered.params,
            lowered.coarsening,
            lowered.dynamic_shared,
            ptx=ptx,
        )

    def _compiled(self, lowered: CudaLowered, options: tuple[str, ...]) -> tuple[bytes, bytes]:
        folder = nvrtc.half_include_dir() if lowered.needs_half else None
        self._check_architecture()
        with self._lock:
            self._compilations += 1
        if self.on_compile is not None:
            self.on_compile(lowered.source)
        return nvrtc.compile_to_cubin_and_ptx(
            lowered.source,
            self.arch,
            include_dirs=(folder,) if folder else (),
            kernel=lowered.kernel,
            options=options,
        )


class LinkingCudaCompiler(CudaCompiler):
    """A :class:`CudaCompiler` that links the kernels a batch compiles into one cubin, a pack,
    through the driver's linker (``link_cubins``, which needs the device's context: a compiler
    without a device builds a cubin a kernel). Each part is relocatable code (``-rdc=true``),
    its entry named after its text so that a pack's kernels never clash; a checked variant is
    compiled whole (its bounds record is one global of one name) and passes the link as it is.
    """

    def __init__(
        self,
        arch: str,
        limits: CudaLimits,
        link_cubins: Callable[[list[bytes]], bytes],
        on_compile: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(arch, limits, on_compile)
        self._link_cubins = link_cubins

    def finalize_part(self, id: ArtifactId[Any], lowered: CudaLowered) -> CudaArtifact:
        """Compiles ``lowered`` into relocatable code for :meth:`link` (a checked variant into a
        whole cubin), with its PTX, which the link leaves to the kernel alone."""
        if split_variant(id.variant)[0]:
            return self.finalize(id, lowered)
        entry = f"{ENTRY_POINT}_{hashlib.sha256(lowered.source.encode()).hexdigest()[:16]}"
        cubin, ptx = self._compiled(lowered, ("-rdc=true", f"-D{ENTRY_POINT}={entry}"))
        return CudaArtifact(
            cubin,
            entry,
            self.arch,
            lowered.params,
            lowered.coarsening,
            lowered.dynamic_shared,
            ptx=ptx,
            relocatable=True,
        )

    def link(self, parts: Sequence[tuple[ArtifactId[Any], CudaArtifact]]) -> list[CudaArtifact]:
        """The relocatable parts linked into one cubin that each artifact holds (in the order
        of their entries), a single one into a cubin of its own; a whole cubin passes as it
        is. CompilationError when the driver does not link them."""
        relocatable = sorted((a for _, a in parts if a.relocatable), key=lambda a: a.entry)
        linked: dict[str, CudaArtifact] = {}
        if len(relocatable) == 1:
            [artifact] = relocatable
            cubin = self._link_cubins([artifact.cubin])
            linked[artifact.entry] = replace(artifact, cubin=cubin, relocatable=False)
        elif relocatable:
            cubin = self._link_cubins([a.cubin for a in relocatable])
            pack = hashlib.sha256(cubin).hexdigest()
            for a in relocatable:
                linked[a.entry] = replace(a, cubin=cubin, pack=pack, relocatable=False)
        return [linked[a.entry] if a.relocatable else a for _, a in parts]


def capability(arch: str) -> tuple[int, int]:
    """``(10, 0)`` for ``sm_100a``: the compute capability an architecture name is for."""
    digits = "".join(c for c in arch.removeprefix("sm_").removeprefix("compute_") if c.isdigit())
    if len(digits) < 2:
        raise UnsupportedError(f"{arch!r} is not a CUDA architecture such as sm_90a")
    return int(digits[:-1]), int(digits[-1])
