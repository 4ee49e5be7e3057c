"""The CPU backend's half of compiling that runs on the launching thread: the store and loads.

:class:`CpuTarget` keeps artifacts in the compilation store (an
:class:`~cubejit.environment.ArtifactStore` namespace of the active environment) under two kinds
of key: the artifact id, and the C source an artifact was compiled from, so a kernel whose text
was compiled before under another id is served without compiling. Loading writes the shared
object to a uniquely named file, ``dlopen``s it and unlinks it at once: nothing stays behind, and
no two libraries of a process ever share a path (the dynamic loader would hand back the first).
A pack, the library that the kernels of one batch share, is loaded once for all of them. The
file goes to a memory file system where there is one (:data:`MEMORY_DIRECTORY`), else to
the temporary directory.
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import os
import secrets
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cubejit.backends.cpu.artifact import CpuArtifact
from cubejit.backends.cpu.codegen import ENTRY
from cubejit.backends.cpu.compiler import CpuCompiler
from cubejit.compile.id import ArtifactId
from cubejit.compile.protocols import CompilationTarget, Flight
from cubejit.environment.artifacts import ArtifactStore, Stored
from cubejit.errors import CompilationError
from cubejit.runtime.checking import RECORD_SYMBOL
from cubejit.runtime.layout import ParamSlot

_log = logging.getLogger("cubejit.compilation")
_names = itertools.count()

MEMORY_DIRECTORY = "/dev/shm"
"""Where shared objects are written for ``dlopen`` when it may be: creating a file there costs
microseconds, on a disk's file system up to half a millisecond, and a warm start loads every
kernel this way. Where it is missing, not writable, or refuses to map code (``noexec``), the
temporary directory serves instead."""


@dataclass(frozen=True, slots=True)
class CpuLoaded:
    """A kernel loaded in this process: call :attr:`entry` with the packed argument block."""

    library: ctypes.CDLL
    """The loaded shared object (kept so it stays loaded)."""
    entry: Any
    """The ``ctypes`` function of the launch entry: ``entry(args: bytes) -> None``."""
    layout: tuple[ParamSlot, ...]
    """The parameter slots the artifact was built for."""
    written: tuple[int, ...] = ()
    """The positions of the buffers the kernel stores into, whose arguments must be
    writeable."""
    record: str = RECORD_SYMBOL
    """The symbol of a checked variant's bounds record (renamed with the entry in a pack)."""


class CpuTarget(CompilationTarget[int, CpuArtifact, CpuLoaded]):
    """Stores and loads CPU artifacts; used only on the thread that launches. The variant of
    an artifact is the alignment, in bytes, its arrays are promised."""

    def __init__(
        self, compiler: CpuCompiler | None = None, store: ArtifactStore | None = None
    ) -> None:
        self._compiler = compiler or CpuCompiler()
        self.artifacts = (
            store
            if store is not None
            else ArtifactStore("cpu", self._compiler.toolchain.fingerprint())
        )
        """The compilation store's namespace for this compiler's artifacts."""
        memory = [MEMORY_DIRECTORY] if os.access(MEMORY_DIRECTORY, os.W_OK | os.X_OK) else []
        self._load_folders = [*memory, tempfile.gettempdir()]
        self._packs: dict[str, ctypes.CDLL] = {}
        """The packs loaded, by their SHA-256: content addressed, so never stale."""

    def compiler(self) -> CpuCompiler:
        return self._compiler

    def persists(self) -> bool:
        return self.artifacts.persists()

    def generation(self) -> int:
        return self.artifacts.generation()

    def stored(self, id: ArtifactId[int]) -> CpuArtifact | None:
        return self.stored_many([id]).get(id)

    def stored_many(self, ids: Sequence[ArtifactId[int]]) -> dict[ArtifactId[int], CpuArtifact]:
        found = {}
        for id, parts in self.artifacts.stored_many(ids).items():
            artifact = self._artifact(parts, id, None)
            if artifact is not None:
                found[id] = artifact
        return found

    def claim(self, id: ArtifactId[int]) -> CpuArtifact | Flight:
        found = self.artifacts.claim(id)
        if isinstance(found, Flight):
            return found
        return self._artifact(found, id, None) or Flight.HERE

    def wait_for(self, id: ArtifactId[int]) -> CpuArtifact | None:
        found = self.artifacts.wait_for(id)
        return None if found is None else self._artifact(found, id, None)

    def stored_for_source(self, source: str) -> CpuArtifact | None:
        parts = self.artifacts.stored_for_source(source)
        return None if parts is None else self._artifact(parts, None, source)

    def store(self, id: ArtifactId[int], artifact: CpuArtifact, source: str | None) -> bool:
        return self.artifacts.store(
            id, artifact.library, artifact.metadata(), source, pack=artifact.pack
        )

    def abandon(self, id: ArtifactId[int]) -> None:
        """``id`` failed and will not be stored: hosts of a fleet waiting for it compile it."""
        self.artifacts.abandon(id)

    def discard(self, id: ArtifactId[int] | None, source: str | None, why: str) -> None:
        self.artifacts.discard(id, source, why)

    def load(self, id: ArtifactId[int], artifact: CpuArtifact) -> CpuLoaded:
        """Loads ``artifact``'s shared object (a pack once for all its kernels);
        CompilationError when the system refuses it."""
        library = None if artifact.pack is None else self._packs.get(artifact.pack)
        if library is None:
            library = self._opened(id, artifact)
            if artifact.pack is not None:
                self._packs[artifact.pack] = library
        try:
            entry = library[artifact.entry]
        except AttributeError as e:
            raise CompilationError(
                f"cannot load the CPU artifact of {id}: {e}", kernel=id.kernel.name
            ) from None
        entry.argtypes = [ctypes.c_char_p]
        entry.restype = None
        written = tuple(j for j, slot in enumerate(artifact.layout) if slot.written)
        record = RECORD_SYMBOL + artifact.entry.removeprefix(ENTRY)
        return CpuLoaded(library, entry, artifact.layout, written, record)

    def _opened(self, id: ArtifactId[int], artifact: CpuArtifact) -> ctypes.CDLL:
        try:
            return _open_library(self._load_folders[0], artifact.library)
        except OSError as e:
            if len(self._load_folders) == 1:
                raise CompilationError(
                    f"cannot load the CPU artifact of {id}: {e}", kernel=id.kernel.name
                ) from None
            return self._load_elsewhere(id, artifact, e)

    def _load_elsewhere(
        self, id: ArtifactId[int], artifact: CpuArtifact, first: OSError
    ) -> ctypes.CDLL:
        """Loads from the temporary directory what the memory directory refused; when that
        works, the memory directory was at fault and is not tried again."""
        try:
            library = _open_library(self._load_folders[-1], artifact.library)
        except OSError as e:
            raise CompilationError(
                f"cannot load the CPU artifact of {id}: {e}", kernel=id.kernel.name
            ) from None
        _log.debug("loading shared objects from %s instead: %s", self._load_folders[-1], first)
        del self._load_folders[:-1]
        return library

    def _artifact(
        self, found: Stored, id: ArtifactId[int] | None, source: str | None
    ) -> CpuArtifact | None:
        """The artifact of a stored entry; one that cannot be read is dropped from the store
        (one WARNING), so that its kernel's compile replaces it."""
        try:
            return CpuArtifact.from_parts(*found)
        except ValueError as e:
            _log.warning("dropping an unreadable CPU artifact for %s: %s", id or "a source", e)
            self.artifacts.discard(id, source, f"unreadable CPU artifact: {e}")
            return None


def _open_library(folder: str, library: bytes) -> ctypes.CDLL:
    """``dlopen``s ``library`` from a file of its own in ``folder``, unlinked at once."""
    name = f"cubejit-{os.getpid()}-{next(_names)}-{secrets.token_hex(4)}.so"
    path = os.path.join(folder, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(library)
        return ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    finally:
        os.unlink(path)
