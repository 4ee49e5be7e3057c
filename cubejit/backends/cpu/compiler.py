"""The CPU backend's half of compiling that may run on any thread: IR to C, C to a shared object.

:class:`CpuCompiler` lowers a kernel (validate cube_dim, expand to IR, emit C) and finalizes the
C text with the system C compiler of its :class:`~cubejit.backends.cpu.fingerprint.Toolchain`,
each run its own subprocess in its own temporary directory, so any number of threads may
finalize at once; the subprocess releases the GIL, which is where compile threads buy real
parallelism. Every run of the C compiler on a kernel's text is counted by :data:`compiler_runs`,
so tests and benchmarks count compiles instead of guessing from time; the runs that link a
batch's object files into one library are counted apart, by :data:`link_runs`. The folders of
processes killed mid-compile are removed by the next process's first compile.

A batch that compiles several kernels has each compiled to an object file whose entry is named
after its text (:meth:`CpuCompiler.finalize_part`) and links them into one shared object, a
*pack* (:meth:`CpuCompiler.link`): a warm process then opens one library for the batch, not one
a kernel. A kernel compiled alone is a library of its own, as is a pack's part that fails to
link with the others.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cubejit.backends.cpu.artifact import CpuArtifact, CpuPart
from cubejit.backends.cpu.capabilities import cpu_capabilities
from cubejit.backends.cpu.codegen import ENTRY, translation_unit
from cubejit.backends.cpu.fingerprint import Toolchain
from cubejit.backends.cpu.layout import variant_parts
from cubejit.backends.cpu.process import RunCount, run_bounded
from cubejit.backends.cpu.vector_math import link_libraries
from cubejit.compile.id import ArtifactId
from cubejit.errors import CompilationError, ValidationError, log_tail
from cubejit.ir.bounds import checked
from cubejit.ir.types import TensorType
from cubejit.ir.validate import validate_for
from cubejit.runtime.checking import RECORD_SYMBOL, split_variant
from cubejit.runtime.layout import ParamSlot, contiguity, kernel_slots
from cubejit.runtime.limits import DeviceLimits

CPU_LIMITS = DeviceLimits(
    max_units_per_cube=1024,
    max_cube_dim=(1024, 1024, 64),
    max_cube_count=(2**31 - 1, 65535, 65535),
)
"""The CPU's limits are CUDA's, so that a kernel launched on one runs on the other; units
beyond them would not run faster on a CPU, whose cubes are loops on a few threads."""

STALE_FOLDER_S = 3600.0
"""Age in seconds past which a compile folder of this user is a killed process's leftover."""

FOLDER_PREFIX = "cubejit-cc-"
"""What the name of each compile's temporary folder starts with."""


compiler_runs = RunCount()
"""Every compile of a kernel's C by any :class:`CpuCompiler` of this process."""

link_runs = RunCount()
"""Every run of the C compiler that links object files into a library."""


@dataclass(frozen=True, slots=True)
class CpuLowered:
    """A kernel lowered to C, not yet compiled."""

    source: str
    """The whole translation unit."""
    kernel: str
    """The kernel's qualified name, for messages (never part of the text)."""
    where: str
    """The kernel's ``file:line``, for messages."""
    layout: tuple[ParamSlot, ...]
    """The parameter slots (see :mod:`cubejit.runtime.layout`)."""

    def failed(self, what: str, log: str) -> CompilationError:
        """The error for a C compiler run on this kernel that went wrong as ``what`` says;
        it carries the compiler's ``log`` and the C source."""
        return CompilationError(
            f"kernel {self.kernel} ({self.where}): {what}",
            kernel=self.kernel,
            log=log,
            source=self.source,
        )


class CpuCompiler:
    """Lowers kernels to C and compiles them; thread-safe, shared by every compile worker."""

    def __init__(
        self, limits: DeviceLimits = CPU_LIMITS, toolchain: Toolchain | None = None
    ) -> None:
        self.limits = limits
        self.toolchain = toolchain if toolchain is not None else Toolchain.from_settings()
        """What every compile of this compiler runs, read from the settings once."""
        self.capabilities = cpu_capabilities(limits)
        self._runs = RunCount()

    @property
    def compilations(self) -> int:
        """How many times this compiler has run the C compiler (every backend's compiler
        counts its platform compiler's runs so, for ``client.compiler.compilations``)."""
        return self._runs.count

    def lower(self, kernel: Any, id: ArtifactId[int], recording: Any, logger: Any) -> CpuLowered:
        """Validates ``kernel.cube_dim`` against the CPU's limits (ValidationError, before any
        compiler runs), expands the kernel to IR and emits its C for the variant ``id.variant``
        (see :mod:`cubejit.backends.cpu.layout`: an alignment, with a tensor contiguity mask for
        a kernel with tensors; a checked variant of one, :mod:`cubejit.runtime.checking`, has
        every access checked)."""
        where = f"{kernel.file}:{kernel.line}"
        cube_dim = tuple(kernel.cube_dim)
        self.limits.check_cube_dim(cube_dim, kernel.name, where)  # type: ignore[arg-type]
        tensors = sum(1 for p in kernel.params if isinstance(p.type, TensorType))
        is_checked, variant = split_variant(id.variant)
        try:
            align, mask = variant_parts(variant, tensors)
        except ValueError as e:
            raise ValidationError(
                f"kernel {kernel.name} ({where}): {e}", kernel=kernel.name
            ) from None
        kernel_ir = kernel.define(plane_dim=self.capabilities.plane_size)
        validate_for(kernel_ir, self.capabilities, cube_dim)  # type: ignore[arg-type]
        recording.defined(str(kernel_ir))
        if is_checked:
            kernel_ir, _ = checked(kernel_ir)
        contiguous = contiguity(kernel_ir, mask)
        source = translation_unit(kernel_ir, cube_dim, align, contiguous)  # type: ignore[arg-type]
        recording.source(source)
        return CpuLowered(source, kernel.name, where, kernel_slots(kernel_ir))

    @staticmethod
    def source(lowered: CpuLowered) -> str:
        """The C text: kernels whose C is equal share one compiled artifact."""
        return lowered.source

    def finalize(self, id: ArtifactId[int], lowered: CpuLowered) -> CpuArtifact:
        """Compiles ``lowered`` into a shared object with :attr:`toolchain`. Raises
        CompilationError carrying the compiler's log and the C source when it fails or runs
        past the compile timeout."""
        flags = self.toolchain.flags
        library = self._compile(lowered, "kernel.so", flags, link_libraries(lowered.source))
        return CpuArtifact(library, ENTRY, lowered.layout)

    def finalize_part(self, id: ArtifactId[int], lowered: CpuLowered) -> CpuArtifact:
        """Compiles ``lowered`` into an object file for :meth:`link`, its entry (and a checked
        variant's bounds record) renamed after the text, so that the parts of one library
        never clash. Raises as :meth:`finalize`."""
        suffix = f"_{hashlib.sha256(lowered.source.encode()).hexdigest()[:16]}"
        entry = ENTRY + suffix
        flags = (
            *(f for f in self.toolchain.flags if f != "-shared"),
            "-c",
            f"-D{ENTRY}={entry}",
            f"-D{RECORD_SYMBOL}={RECORD_SYMBOL}{suffix}",
        )
        compiled = self._compile(lowered, "kernel.o", flags, ())
        part = CpuPart(compiled, link_libraries(lowered.source))
        return CpuArtifact(b"", entry, lowered.layout, part=part)

    def link(self, parts: Sequence[tuple[ArtifactId[int], CpuArtifact]]) -> list[CpuArtifact]:
        """Links the object files of ``parts`` into one library, a pack, that each artifact
        holds (linked in the order of their entries, so that processes compiling one batch
        link the same bytes); a single part into a library of its own. CompilationError when
        the C compiler does not link them."""
        if len(parts) == 1:
            artifact = parts[0][1]
            return [_linked(artifact, self._link([artifact]), None)]
        library = self._link(sorted((a for _, a in parts), key=lambda a: a.entry))
        digest = hashlib.sha256(library).hexdigest()
        return [_linked(artifact, library, digest) for _, artifact in parts]

    def _compile(
        self, lowered: CpuLowered, output: str, flags: tuple[str, ...], libraries: tuple[str, ...]
    ) -> bytes:
        """Runs the C compiler with ``flags`` on ``lowered`` into ``output``, in a temporary
        folder of its own, and returns what it wrote."""
        _clean_stale_folders_once()
        tools = self.toolchain
        with tempfile.TemporaryDirectory(prefix=FOLDER_PREFIX) as folder:
            work = Path(folder)
            (work / "kernel.c").write_text(lowered.source, encoding="utf-8")
            command = [tools.cc, *flags, *tools.tuning, "-o", output, "kernel.c", *libraries]
            self._runs.increment()
            compiler_runs.increment()
            log = _run_compiler(command, work, tools.timeout, lowered.failed)
            try:
                return (work / output).read_bytes()
            except OSError:
                raise lowered.failed(
                    f"the C compiler {tools.cc!r} wrote no {output}\n{log}", log
                ) from None

    def _link(self, parts: Sequence[CpuArtifact]) -> bytes:
        """The shared object the C compiler links from the object files of ``parts``."""
        tools = self.toolchain
        objects = [artifact.part for artifact in parts if artifact.part is not None]
        assert len(objects) == len(parts), "only parts finalize_part made are linked"
        libraries = sorted({flag for part in objects for flag in part.libraries})
        entries = ", ".join(artifact.entry for artifact in parts)

        def failed(what: str, log: str) -> CompilationError:
            return CompilationError(f"linking {entries}: {what}", log=log)

        with tempfile.TemporaryDirectory(prefix=FOLDER_PREFIX) as folder:
            work = Path(folder)
            names = []
            for i, part in enumerate(objects):
                names.append(f"part{i}.o")
                (work / names[-1]).write_bytes(part.object)
            command = [tools.cc, *tools.flags, "-o", "pack.so", *names, *libraries]
            link_runs.increment()
            log = _run_compiler(command, work, tools.timeout, failed)
            try:
                return (work / "pack.so").read_bytes()
            except OSError:
                raise failed(
                    f"the C compiler {tools.cc!r} wrote no shared object\n{log}", log
                ) from None


def _linked(artifact: CpuArtifact, library: bytes, pack: str | None) -> CpuArtifact:
    return CpuArtifact(library, artifact.entry, artifact.layout, pack)


def _run_compiler(
    command: list[str], work: Path, timeout: float, failed: Callable[[str, str], CompilationError]
) -> str:
    """Runs the compiler (see :mod:`cubejit.backends.cpu.process`) and returns its log;
    ``failed`` makes the error of a run that went wrong from what went wrong and the log."""
    try:
        finished = run_bounded(command, work, timeout)
    except OSError as e:
        raise failed(
            f"cannot run the C compiler {command[0]!r}: {e}. "
            "Install a C compiler or point CC at one.",
            str(e),
        ) from None
    if finished.returncode is None:
        raise failed(
            f"the C compiler ran past the compile timeout of {timeout:g} s "
            "(CUBEJIT_COMPILE_TIMEOUT) and was killed",
            finished.log,
        )
    if finished.returncode != 0:
        raise failed(
            f"the C compiler failed (exit status {finished.returncode}):\n{log_tail(finished.log)}",
            finished.log,
        )
    return finished.log


_cleaned = threading.Event()


def _clean_stale_folders_once() -> None:
    """At a process's first compile: removes the compile folders that processes killed
    mid-compile (SIGKILL runs no cleanup) left in the temporary directory."""
    if not _cleaned.is_set():
        _cleaned.set()
        clean_stale_folders(Path(tempfile.gettempdir()))


def clean_stale_folders(parent: Path, now: float | None = None) -> int:
    """Removes the compile folders in ``parent`` that are this user's and older than
    :data:`STALE_FOLDER_S` (no compile runs that long without writing there); never a
    symbolic link, another user's folder or anything not named like a compile folder. The
    number removed."""
    now = time.time() if now is None else now
    removed = 0
    try:
        names = [n for n in os.listdir(parent) if n.startswith(FOLDER_PREFIX)]
    except OSError:
        return 0
    for name in names:
        path = parent / name
        try:
            found = path.lstat()
        except OSError:
            continue
        if (
            stat.S_ISDIR(found.st_mode)
            and found.st_uid == os.getuid()
            and now - found.st_mtime > STALE_FOLDER_S
        ):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed
