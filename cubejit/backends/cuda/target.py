"""The CUDA half of compilation that runs on the thread owning the device: the store and the
loads (``cuModuleLoadData`` + ``cuModuleGetFunction``).

Artifacts live in the compilation store as the cubin's bytes plus JSON-able metadata (see
:mod:`cubejit.backends.cuda.artifact`), in the namespace ``cuda/<cubejit version>/<fingerprint>``
where the fingerprint, ``sm_90-nvrtc13.5``, says what the cubin was built for and by: code
built for one fingerprint is never served to another.

A loaded module stays loaded as long as the target lives, which is as long as its client: a
stream may still run a kernel of it, and a kernel the loader dropped after an environment switch
may still be queued there.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cubejit.backends.cuda import nvrtc
from cubejit.backends.cuda.artifact import CudaArtifact, ParamSlot
from cubejit.backends.cuda.compiler import CudaCompiler
from cubejit.backends.cuda.driver import call, driver_module
from cubejit.compile.id import ArtifactId
from cubejit.compile.protocols import CompilationTarget
from cubejit.environment.artifacts import ArtifactStore, Stored
from cubejit.errors import CompilationError

log = logging.getLogger("cubejit.compilation")


def fingerprint(compute_capability: tuple[int, int]) -> str:
    """What a cubin is built for and by: ``sm_90-nvrtc13.5``."""
    major, minor = compute_capability
    nvrtc_major, nvrtc_minor = nvrtc.version()
    return f"sm_{major}{minor}-nvrtc{nvrtc_major}.{nvrtc_minor}"


@dataclass(frozen=True, slots=True)
class CudaKernelHandle:
    """A kernel loaded on the device: what a launch dispatches."""

    function: Any
    """The ``CUfunction``."""
    params: tuple[ParamSlot, ...]
    """The parameters a launch passes, in order."""
    module: Any
    """The ``CUmodule`` holding the function (kept so it stays loaded)."""
    coarsening: int = 1
    """Cubes along x per CUDA block in the kernel's no-alias form (see
    :attr:`~cubejit.backends.cuda.artifact.CudaArtifact.coarsening`)."""


Variant = bool | None
"""A CUDA artifact's variant: :data:`~cubejit.backends.cuda.coarsening.NO_ALIAS` or ``None``."""


class CudaTarget(CompilationTarget[Variant, CudaArtifact, CudaKernelHandle]):
    """Loads CUDA artifacts into one context and keeps them in a store."""

    def __init__(self, context: Any, compiler: CudaCompiler, store: ArtifactStore) -> None:
        self._context = context
        self._compiler = compiler
        self._store = store
        self._modules: list[Any] = []

    def compiler(self) -> CudaCompiler:
        return self._compiler

    def persists(self) -> bool:
        return self._store.persists()

    def generation(self) -> int:
        """Changes whenever the store does; the loader then drops its loaded kernels."""
        return self._store.generation()

    def stored(self, id: ArtifactId[Variant]) -> CudaArtifact | None:
        return self.stored_many([id]).get(id)

    def stored_many(
        self, ids: Sequence[ArtifactId[Variant]]
    ) -> dict[ArtifactId[Variant], CudaArtifact]:
        found = {}
        for id, entry in self._store.stored_many(ids).items():
            artifact = self._decoded(entry, id, None)
            if artifact is not None:
                found[id] = artifact
        return found

    def claim(self, id: ArtifactId[Variant]) -> CudaArtifact | None:
        entry = self._store.claim(id)
        return None if entry is None else self._decoded(entry, id, None)

    def stored_for_source(self, source: str) -> CudaArtifact | None:
        entry = self._store.stored_for_source(source)
        return None if entry is None else self._decoded(entry, None, source)

    def discard(self, id: ArtifactId[Variant] | None, source: str | None, why: str) -> None:
        self._store.discard(id, source, why)

    def load(self, id: ArtifactId[Variant], artifact: CudaArtifact) -> CudaKernelHandle:
        """Loads the cubin into the context; a refused image is a ``CompilationError``."""
        driver = driver_module()
        call(
            driver.cuCtxSetCurrent,
            self._context,
            what="make the context current",
            error=CompilationError,
        )
        module = call(
            driver.cuModuleLoadData,
            artifact.cubin,
            what=f"load the cubin of {id}",
            error=CompilationError,
        )
        self._modules.append(module)
        function = call(
            driver.cuModuleGetFunction,
            module,
            artifact.entry.encode(),
            what=f"find {artifact.entry} in the cubin of {id}",
            error=CompilationError,
        )
        return CudaKernelHandle(function, artifact.params, module, artifact.coarsening)

    def store(self, id: ArtifactId[Variant], artifact: CudaArtifact, source: str | None) -> bool:
        ingredients = {"arch": artifact.arch}
        return self._store.store(id, artifact.cubin, artifact.metadata(), source, ingredients)

    def abandon(self, id: ArtifactId[Variant]) -> None:
        """``id`` failed and will not be stored: hosts of a fleet waiting for it compile it."""
        self._store.abandon(id)

    def _decoded(
        self, entry: Stored, id: ArtifactId[Variant] | None, source: str | None
    ) -> CudaArtifact | None:
        """The artifact of a stored entry; one that cannot be read is dropped from the store
        (one WARNING), so that its kernel's compile replaces it."""
        try:
            return CudaArtifact.from_stored(*entry)
        except (ValueError, KeyError, TypeError) as e:
            log.warning(
                "the stored CUDA artifact for %s cannot be used (%s); it is dropped and "
                "compiled again",
                id or "a source",
                e,
            )
            self._store.discard(id, source, f"unreadable CUDA artifact: {e}")
            return None
