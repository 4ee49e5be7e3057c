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
from dataclasses import dataclass
from typing import Any

from cubejit.backends.cuda import nvrtc
from cubejit.backends.cuda.artifact import CudaArtifact, ParamSlot
from cubejit.backends.cuda.compiler import CudaCompiler
from cubejit.backends.cuda.driver import call, driver_module
from cubejit.compile.id import ArtifactId
from cubejit.environment import ArtifactStore
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
    dynamic_shared: int = 0
    """Bytes of dynamic shared memory each launch passes."""


class CudaTarget:
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

    def stored(self, id: ArtifactId[Any]) -> CudaArtifact | None:
        return self._decoded(self._store.stored(id), str(id))

    def stored_for_source(self, source: str) -> CudaArtifact | None:
        return self._decoded(self._store.stored_for_source(source), "a source")

    def load(self, id: ArtifactId[Any], artifact: CudaArtifact) -> CudaKernelHandle:
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
        if artifact.dynamic_shared:
            call(
                driver.cuFuncSetAttribute,
                function,
                driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                artifact.dynamic_shared,
                what=f"give {id} {artifact.dynamic_shared} bytes of dynamic shared memory",
                error=CompilationError,
            )
        return CudaKernelHandle(
            function, artifact.params, module, artifact.coarsening, artifact.dynamic_shared
        )

    def store(self, id: ArtifactId[Any], artifact: CudaArtifact, source: str | None) -> bool:
        ingredients = {"arch": artifact.arch}
        return self._store.store(id, artifact.cubin, artifact.metadata(), source, ingredients)

    def abandon(self, id: ArtifactId[Any]) -> None:
        """``id`` failed and will not be stored: hosts of a fleet waiting for it compile it."""
        self._store.abandon(id)

    def _decoded(
        self, entry: tuple[bytes, dict[str, Any]] | None, what: str
    ) -> CudaArtifact | None:
        if entry is None:
            return None
        try:
            return CudaArtifact.from_stored(*entry)
        except (ValueError, KeyError, TypeError) as e:
            log.warning(
                "the stored CUDA artifact for %s cannot be used (%s); compiling again", what, e
            )
            return None
