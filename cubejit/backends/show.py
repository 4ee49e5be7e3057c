"""What cubejit generates for a kernel, as text: its IR, its C or CUDA C++, its PTX, its SASS.

:func:`kernel_text` lowers a specialisation exactly as a launch's compile does, for the
variant a client prepares ahead of launches (64-byte aligned buffers on the CPU, arrays that do
not overlap on CUDA; tensors contiguous innermost), so the text is the one stored for that
variant. PTX comes from NVRTC and needs no GPU; SASS is the cubin NVRTC builds from that same
source for ``arch``, disassembled by ``cuobjdump`` (else ``nvdisasm``) from the PATH.
``checked=True`` shows the checked variant (:mod:`cubejit.runtime.checking`) instead.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from cubejit.compile.id import ArtifactId
from cubejit.errors import BackendUnavailableError, CubejitError
from cubejit.ir.bounds import checked as checked_ir
from cubejit.ir.types import TensorType
from cubejit.runtime.checking import checked_variant
from cubejit.runtime.layout import all_contiguous

FORMS = ("ir", "source", "ptx", "sass")
"""What :func:`kernel_text` can show."""

DEFAULT_ARCH = "sm_90"
"""The architecture PTX and SASS are built for when none is given."""


class _Unrecorded:
    """The recording of a compile nobody records."""

    def defined(self, text: str) -> None:
        pass

    def source(self, text: str) -> None:
        pass


def kernel_text(
    spec: Any, form: str = "source", backend: str = "cpu", checked: bool = False, arch: str = ""
) -> str:
    """The text of ``form`` (one of :data:`FORMS`) for ``spec`` on ``backend``. PTX and SASS
    are CUDA's, whatever ``backend`` says; ``arch`` defaults to :data:`DEFAULT_ARCH`.
    Raises CubejitError for an unknown form or backend, BackendUnavailableError when the tools
    a form needs are missing, and the compile's own errors for a kernel that does not build."""
    if form not in FORMS:
        raise CubejitError(f"cannot show {form!r}; show one of {', '.join(FORMS)}")
    if form == "ir":
        if backend == "cuda":
            from cubejit.backends.cuda.capabilities import cuda_capabilities
            from cubejit.backends.cuda.driver import ARCHITECTURAL_LIMITS

            ir = spec.define(plane_dim=cuda_capabilities(ARCHITECTURAL_LIMITS).plane_size)
        else:
            ir = spec.define()
        return str(checked_ir(ir)[0] if checked else ir)
    if form == "source" and backend == "cpu":
        return _cpu_source(spec, checked)
    if backend not in ("cpu", "cuda"):
        raise CubejitError(f"no backend {backend!r}; cubejit has cpu, cuda")
    arch = arch or DEFAULT_ARCH
    lowered = _cuda_lowered(spec, checked, arch)
    if form == "source":
        return str(lowered.source)
    from cubejit.backends.cuda import nvrtc

    folders = (nvrtc.half_include_dir(),) if lowered.needs_half else ()
    include = tuple(f for f in folders if f is not None)
    if form == "ptx":
        return nvrtc.compile_to_ptx(lowered.source, arch, include_dirs=include, kernel=spec.name)
    cubin = nvrtc.compile_to_cubin(lowered.source, arch, include_dirs=include, kernel=spec.name)
    return disassemble(cubin)


def _cpu_source(spec: Any, checked: bool) -> str:
    from cubejit.backends.cpu.compiler import CpuCompiler
    from cubejit.backends.cpu.launcher import MAX_ALIGN
    from cubejit.backends.cpu.layout import make_variant

    mask = all_contiguous(spec.params)
    variant: Any = make_variant(MAX_ALIGN, mask, mask.bit_length())
    if checked:
        variant = checked_variant(variant)
    lowered = CpuCompiler().lower(spec, ArtifactId(spec.id(), variant), _Unrecorded(), None)
    return lowered.source


def _cuda_lowered(spec: Any, checked: bool, arch: str) -> Any:
    try:
        from cubejit.backends.cuda.coarsening import NO_ALIAS
        from cubejit.backends.cuda.compiler import CudaCompiler
    except ImportError as e:
        raise BackendUnavailableError(
            f"showing CUDA code needs the cuda extra (pip install cubejit[cuda]): {e}"
        ) from None
    variant: Any = NO_ALIAS
    if any(isinstance(p.type, TensorType) for p in spec.params):
        variant = (NO_ALIAS, all_contiguous(spec.params))
    if checked:
        variant = checked_variant(variant)
    return CudaCompiler(arch).lower(spec, ArtifactId(spec.id(), variant), _Unrecorded(), None)


def disassembler() -> list[str] | None:
    """The command that prints a cubin's SASS (the file's path appended): ``cuobjdump
    -sass``, else ``nvdisasm``, from the PATH; None when neither is there."""
    found = shutil.which("cuobjdump")
    if found:
        return [found, "-sass"]
    found = shutil.which("nvdisasm")
    return [found] if found else None


def disassemble(cubin: bytes) -> str:
    """The SASS of ``cubin``; BackendUnavailableError when no disassembler is on the PATH."""
    command = disassembler()
    if command is None:
        raise BackendUnavailableError(
            "showing SASS needs cuobjdump or nvdisasm on the PATH (the CUDA toolkit's "
            "binaries); --ptx shows the PTX without them"
        )
    with tempfile.TemporaryDirectory(prefix="cubejit-sass-") as folder:
        path = Path(folder) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run(
            [*command, str(path)], capture_output=True, text=True, timeout=120, check=False
        )
    if done.returncode != 0:
        raise CubejitError(f"{command[0]} failed on the cubin:\n{done.stderr.strip()}")
    return done.stdout
