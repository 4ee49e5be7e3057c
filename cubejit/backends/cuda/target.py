"""The CUDA half of compilation that runs on the thread owning the device: the store and the
loads (``cuModuleLoadData`` + ``cuModuleGetFunction``).

Artifacts live in the compilation store as the cubin's bytes followed by the PTX it was made
from, each compressed apart so that a warm load decompresses the cubin alone, plus JSON-able
metadata (see :mod:`cubejit.backends.cuda.artifact`; ``cubin_size`` says where the PTX starts),
in the namespace ``cuda/<cubejit version>/<fingerprint>`` where the
fingerprint, ``sm_90-nvrtc13.5``, says what the cubin was built for and by: code built for one
fingerprint is never served to another.

A GPU newer than every stored cubin (bundles built ahead for ``sm_80`` meeting a newer chip)
is served the portable PTX of the newest older architecture instead: the driver compiles it
at load (one WARNING per process), and the cubin it made is stored for this GPU, so the next
process loads that. NVRTC does not run.

The kernels one batch compiled on a GPU share one cubin, a pack, that the driver linked from
their relocatable parts (:class:`~cubejit.backends.cuda.compiler.LinkingCudaCompiler`): stored
once and loaded as one module for all of them. Each kernel's own PTX is kept in its source's
entry, which a warm load never reads: only a newer GPU asks for it.

A loaded module stays loaded as long as the target lives, which is as long as its client: a
stream may still run a kernel of it, and a kernel the loader dropped after an environment switch
may still be queued there.
"""

from __future__ import annotations

import ctypes
import logging
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from cubejit.backends.cuda import nvrtc
from cubejit.backends.cuda.artifact import CudaArtifact, ParamSlot
from cubejit.backends.cuda.compiler import CudaCompiler
from cubejit.backends.cuda.driver import call, driver_module
from cubejit.compile.id import ArtifactId
from cubejit.compile.protocols import CompilationTarget, Flight
from cubejit.environment.artifacts import ArtifactStore, Stored
from cubejit.environment.build import version
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.errors import CompilationError

log = logging.getLogger("cubejit.compilation")


CUBIN_SIZE = "cubin_size"
"""The metadata key saying how many bytes of a stored payload are the cubin; the PTX follows."""
PACKING = "packing"
"""The metadata key saying that the cubin and the PTX are compressed apart (``"zlib"``), each
with ``zlib``: absent in entries stored before, whose payload the store itself compressed."""
_ZLIB_LEVEL = 6
_FINGERPRINT = re.compile(r"sm_(\d+)-nvrtc\d+\.\d+")


def fingerprint(compute_capability: tuple[int, int]) -> str:
    """What a cubin is built for and by: ``sm_90-nvrtc13.5``. Loads no library: the NVRTC
    version comes from its wheel where installed (see
    :func:`~cubejit.backends.cuda.nvrtc.version`)."""
    major, minor = compute_capability
    nvrtc_major, nvrtc_minor = nvrtc.version()
    return f"sm_{major}{minor}-nvrtc{nvrtc_major}.{nvrtc_minor}"


def packed(artifact: CudaArtifact) -> tuple[bytes, dict[str, object]]:
    """The payload and metadata ``artifact`` is stored as: the cubin, then its PTX, each
    compressed apart, so that a warm load decompresses the cubin alone."""
    cubin = zlib.compress(artifact.cubin, _ZLIB_LEVEL)
    ptx = artifact.packed_ptx or (zlib.compress(artifact.ptx, _ZLIB_LEVEL) if artifact.ptx else b"")
    return cubin + ptx, {**artifact.metadata(), CUBIN_SIZE: len(cubin), PACKING: "zlib"}


def unpacked(payload: bytes, metadata: dict[str, Any]) -> CudaArtifact:
    """The artifact :func:`packed` stored, its PTX left packed (or one stored before either
    was compressed apart: the cubin then the PTX, or the cubin alone before PTX was kept).
    Raises ``ValueError`` for one that is not."""
    size = metadata.get(CUBIN_SIZE)
    packing = metadata.get(PACKING)
    if size is None and packing is None:
        return CudaArtifact.from_stored(payload, metadata)
    if not isinstance(size, int) or not 0 < size <= len(payload):
        raise ValueError(f"stored CUDA artifact says its cubin is {size!r} bytes")
    if packing is None:
        return CudaArtifact.from_stored(payload[:size], metadata, ptx=payload[size:])
    if packing != "zlib":
        raise ValueError(f"stored CUDA artifact is packed with unknown {packing!r}")
    try:
        cubin = zlib.decompress(payload[:size])
    except zlib.error as e:
        raise ValueError(f"stored CUDA cubin does not decompress: {e}") from None
    return CudaArtifact.from_stored(cubin, metadata, packed_ptx=payload[size:])


def driver_link(context: Any, inputs: Sequence[tuple[Any, bytes]], what: str) -> bytes:
    """The cubin the driver's linker makes of ``inputs`` (each a ``CUjitInputType`` and its
    bytes) for the device of ``context``; a ``CompilationError`` saying ``what`` failed when it
    refuses them."""
    driver = driver_module()
    call(driver.cuCtxSetCurrent, context, what="make the context current", error=CompilationError)
    state = call(
        driver.cuLinkCreate, 0, [], [], what="start the driver's linker", error=CompilationError
    )
    try:
        for i, (kind, data) in enumerate(inputs):
            name = f"input{i}".encode()
            call(
                driver.cuLinkAddData,
                state,
                kind,
                data,
                len(data),
                name,
                0,
                [],
                [],
                what=what,
                error=CompilationError,
            )
        image, size = call(driver.cuLinkComplete, state, what=what, error=CompilationError)
        return ctypes.string_at(int(image), int(size))
    finally:
        driver.cuLinkDestroy(state)


def link_cubins(context: Any, cubins: list[bytes]) -> bytes:
    """One cubin for the device of ``context`` linked from relocatable ``cubins`` (see
    :class:`~cubejit.backends.cuda.compiler.LinkingCudaCompiler`)."""
    cubin_input = driver_module().CUjitInputType.CU_JIT_INPUT_CUBIN
    what = f"link {len(cubins)} kernels into one cubin"
    return driver_link(context, [(cubin_input, cubin) for cubin in cubins], what)


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


Variant = bool | None | tuple[bool | None, int]
"""A CUDA artifact's variant: :data:`~cubejit.backends.cuda.coarsening.NO_ALIAS` or ``None``,
paired with the tensors' contiguity mask for a kernel with tensors."""


class CudaTarget(CompilationTarget[Variant, CudaArtifact, CudaKernelHandle]):
    """Loads CUDA artifacts into one context and keeps them in a store."""

    def __init__(self, context: Any, compiler: CudaCompiler, store: ArtifactStore) -> None:
        self._context = context
        self._compiler = compiler
        self._store = store
        self._modules: list[Any] = []
        self._packs: dict[str, Any] = {}
        """The packs loaded, by their SHA-256: content addressed, so never stale."""
        self._warned_ptx = False
        self._older: tuple[int, list[str]] | None = None

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
        missing = [id for id in ids if id not in found]
        if missing and self._context is not None:
            found.update(self._older_ptx(missing))
        return found

    def _older_ptx(
        self, ids: Sequence[ArtifactId[Variant]]
    ) -> dict[ArtifactId[Variant], CudaArtifact]:
        """For kernels this GPU's namespace lacks: the portable PTX stored for the newest
        older architecture, as artifacts without a cubin (the driver compiles them at load).
        A kernel of a pack has its PTX apart, beside its source (read only here)."""
        found: dict[ArtifactId[Variant], CudaArtifact] = {}
        for found_print in self._older_fingerprints():
            wanted = [id for id in ids if id not in found]
            if not wanted:
                break
            older = ArtifactStore("cuda", found_print)
            artifacts = {}
            for id, (payload, metadata) in older.stored_many(wanted).items():
                try:
                    artifacts[id] = unpacked(payload, metadata)
                except (ValueError, KeyError, TypeError):
                    continue
            packed_apart = [i for i, a in artifacts.items() if a.pack and a.portable()]
            for id, ptx in (older.own_many(packed_apart) if packed_apart else {}).items():
                artifacts[id] = replace(artifacts[id], ptx=ptx, pack=None)
            for id, artifact in artifacts.items():
                if artifact.portable_ptx():
                    found[id] = replace(artifact, cubin=b"")
        return found

    def claim(self, id: ArtifactId[Variant]) -> CudaArtifact | Flight:
        found = self._store.claim(id)
        if isinstance(found, Flight):
            return found
        return self._decoded(found, id, None) or Flight.HERE

    def wait_for(self, id: ArtifactId[Variant]) -> CudaArtifact | None:
        found = self._store.wait_for(id)
        return None if found is None else self._decoded(found, id, None)

    def stored_for_source(self, source: str) -> CudaArtifact | None:
        entry = self._store.stored_for_source(source)
        return None if entry is None else self._decoded(entry, None, source)

    def discard(self, id: ArtifactId[Variant] | None, source: str | None, why: str) -> None:
        self._store.discard(id, source, why)

    def _older_fingerprints(self) -> list[str]:
        """The fingerprints of the active environment's CUDA namespaces for older GPUs than
        this one, the newest first; listed once per environment (a miss may ask again)."""
        generation = self.generation()
        if self._older is not None and self._older[0] == generation:
            return self._older[1]
        major, minor = self._compiler.limits.compute_capability
        mine = major * 10 + minor
        older = []
        for summary in ENVIRONMENTS.namespaces():
            backend, _, rest = summary.namespace.partition("/")
            cubejit_version, _, found_print = rest.partition("/")
            match = _FINGERPRINT.fullmatch(found_print)
            if backend == "cuda" and cubejit_version == version() and match is not None:
                if int(match.group(1)) < mine:
                    older.append((int(match.group(1)), found_print))
        self._older = (generation, [name for _, name in sorted(older, reverse=True)])
        return self._older[1]

    def load(self, id: ArtifactId[Variant], artifact: CudaArtifact) -> CudaKernelHandle:
        """Loads the cubin into the context (compiling an artifact's PTX with the driver first
        when it has no cubin); a refused image is a ``CompilationError``."""
        driver = driver_module()
        call(
            driver.cuCtxSetCurrent,
            self._context,
            what="make the context current",
            error=CompilationError,
        )
        if not artifact.cubin:
            artifact = self._from_ptx(id, artifact)
        module = None if artifact.pack is None else self._packs.get(artifact.pack)
        if module is None:
            module = call(
                driver.cuModuleLoadData,
                artifact.cubin,
                what=f"load the cubin of {id}",
                error=CompilationError,
            )
            self._modules.append(module)
            if artifact.pack is not None:
                self._packs[artifact.pack] = module
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

    def _from_ptx(self, id: ArtifactId[Variant], artifact: CudaArtifact) -> CudaArtifact:
        """``artifact`` with the cubin the driver compiles from its PTX for this GPU, stored
        under ``id`` in this GPU's namespace for the next process."""
        text = artifact.ptx_text() + b"\0"
        cubin = driver_link(
            self._context,
            [(driver_module().CUjitInputType.CU_JIT_INPUT_PTX, text)],
            f"compile the PTX of {id} for this GPU",
        )
        level = logging.DEBUG if self._warned_ptx else logging.WARNING
        self._warned_ptx = True
        log.log(
            level,
            "no cubin for %s is stored for %s: the driver compiled the PTX stored for %s, and "
            "its cubin is kept for the next process (warm this GPU's architecture to skip this)",
            self._compiler.arch,
            id,
            artifact.arch,
        )
        artifact = replace(artifact, cubin=cubin, arch=self._compiler.arch, ptx=b"", packed_ptx=b"")
        self.store(id, artifact, None)
        return artifact

    def store(self, id: ArtifactId[Variant], artifact: CudaArtifact, source: str | None) -> bool:
        ingredients = {"arch": artifact.arch}
        if artifact.pack is not None:
            metadata = artifact.metadata()
            return self._store.store(
                id,
                artifact.cubin,
                metadata,
                source,
                ingredients,
                pack=artifact.pack,
                own=artifact.ptx_text(),
            )
        payload, metadata = packed(artifact)
        return self._store.store(id, payload, metadata, source, ingredients, compress=False)

    def abandon(self, id: ArtifactId[Variant]) -> None:
        """``id`` failed and will not be stored: hosts of a fleet waiting for it compile it."""
        self._store.abandon(id)

    def _decoded(
        self, entry: Stored, id: ArtifactId[Variant] | None, source: str | None
    ) -> CudaArtifact | None:
        """The artifact of a stored entry; one that cannot be read is dropped from the store
        (one WARNING), so that its kernel's compile replaces it."""
        try:
            return unpacked(*entry)
        except (ValueError, KeyError, TypeError) as e:
            log.warning(
                "the stored CUDA artifact for %s cannot be used (%s); it is dropped and "
                "compiled again",
                id or "a source",
                e,
            )
            self._store.discard(id, source, f"unreadable CUDA artifact: {e}")
            return None
