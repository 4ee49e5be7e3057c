"""Building CUDA artifacts on a machine without a GPU, for the GPUs that will run them.

``cubejit warm TARGET --backend cuda --arch sm_80,sm_90a,sm_100a`` makes one
:class:`OfflineBuild` per architecture: NVRTC (from its wheel) compiles every kernel for that
architecture into the active environment, under the namespace a GPU of that architecture reads
(:func:`~cubejit.backends.cuda.target.fingerprint` of its compute capability), in the form its
first launch asks for (the no-alias variant, which ``CudaClient.prepare`` queues too).
``cubejit env export`` then ships them, and a GPU host that imports the bundle launches them
without running NVRTC. Nothing is loaded: no driver, no context.
"""

from __future__ import annotations

from typing import Any

from cubejit.backends.cuda.artifact import ELF_MAGIC, CudaArtifact
from cubejit.backends.cuda.coarsening import NO_ALIAS
from cubejit.backends.cuda.compiler import CudaCompiler, capability
from cubejit.backends.cuda.target import CudaKernelHandle, CudaTarget, Variant, fingerprint
from cubejit.compile.id import ArtifactId
from cubejit.compile.loader import KernelLoader
from cubejit.environment.artifacts import ArtifactStore
from cubejit.errors import CompilationError
from cubejit.ir.types import TensorType
from cubejit.runtime.layout import all_contiguous


class OfflineTarget(CudaTarget):
    """A CUDA target with no device: it stores what its compiler builds, and "loading" an
    artifact only checks that it holds a cubin."""

    def __init__(self, compiler: CudaCompiler, store: ArtifactStore) -> None:
        super().__init__(None, compiler, store)

    def load(self, id: ArtifactId[Variant], artifact: CudaArtifact) -> CudaKernelHandle:
        if not artifact.cubin.startswith(ELF_MAGIC):
            raise CompilationError(f"the artifact of {id} holds no cubin", kernel=id.kernel.name)
        return CudaKernelHandle(None, artifact.params, None, artifact.coarsening)


class OfflineBuild:
    """What ``cubejit warm`` needs of a client, for one architecture and no GPU: a loader and
    :meth:`prepare`."""

    backend = "cuda"

    def __init__(self, arch: str, parallelism: int | None = None) -> None:
        self.arch = arch
        """The architecture built for, as NVRTC names it (``sm_90a``)."""
        self.compiler = CudaCompiler(arch)
        """The compiler (``compiler.compilations`` counts NVRTC runs)."""
        store = ArtifactStore("cuda", fingerprint(capability(arch)))
        self.namespace = store.namespace
        """Where the artifacts go: the namespace a GPU of this architecture reads."""
        self.loader: KernelLoader[Variant, CudaArtifact, CudaKernelHandle] = KernelLoader(
            OfflineTarget(self.compiler, store), parallelism
        )
        """The loader of the build's kernels."""

    def prepare(self, spec: Any) -> None:
        """Queues ``spec`` in the form a GPU client's ``prepare`` queues: the no-alias one (with
        every tensor contiguous innermost, for a kernel with tensors)."""
        if any(isinstance(p.type, TensorType) for p in spec.params):
            self.loader.enqueue(spec, (NO_ALIAS, all_contiguous(spec.params)))
        else:
            self.loader.enqueue(spec, NO_ALIAS)

    def compile_queued(self) -> None:
        self.loader.compile_queued()
