"""The two halves of a backend's compilation, split by where each may run.

:class:`ArtifactCompiler` runs on any thread, so several kernels compile at once: it lowers a
kernel to backend source and finalizes that source into what the device loads.
:class:`CompilationTarget` runs only on the thread that owns the device: it holds the
compilation store and loads artifacts. The :class:`~cubejit.compile.loader.KernelLoader` drives
both; it relies on duck typing only, so any object with these methods works.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from cubejit.compile.id import ArtifactId, KernelId

if TYPE_CHECKING:
    from cubejit.compile.recording import CompilationRecording, ServerLogger

Lowered = TypeVar("Lowered")
Artifact = TypeVar("Artifact")
Loaded = TypeVar("Loaded")


@runtime_checkable
class Kernel(Protocol):
    """What the loader needs of a kernel: its id. Only the compiler looks further."""

    def id(self) -> KernelId: ...


class ArtifactCompiler(Protocol[Lowered, Artifact]):
    """The half of a backend's compilation that may run on any thread.

    Shared by every worker of a batch at once, so it must be thread-safe. Lowering is Python
    and holds the GIL; finalizing calls a platform compiler (a subprocess, NVRTC) that releases
    it, which is where worker threads buy real parallelism.
    """

    def lower(
        self,
        kernel: Any,
        id: ArtifactId[Any],
        recording: CompilationRecording,
        logger: ServerLogger,
    ) -> Lowered:
        """Validates ``kernel`` against the device, expands it to IR and lowers it to backend
        source, telling ``recording`` its IR (``defined``) and source (``source``).
        Raises :class:`~cubejit.errors.ValidationError` for a kernel the device cannot run."""
        ...

    @staticmethod
    def source(lowered: Lowered) -> str | None:
        """The text an artifact finalized from ``lowered`` can be reused by, when finalizing is
        slow enough that reuse across kernel ids pays; ``None`` finalizes every time."""
        ...

    def finalize(self, id: ArtifactId[Any], lowered: Lowered) -> Artifact:
        """Turns ``lowered`` into what the device loads (runs the platform compiler).
        Raises :class:`~cubejit.errors.CompilationError` with the compiler's log."""
        ...


class CompilationTarget(Protocol[Artifact, Loaded]):
    """The half of a backend's compilation that runs only on the thread owning the device:
    the compilation store and the loads.

    A target whose store is shared by several hosts may also have ``abandon(id)``: after a
    batch, the loader calls it for each kernel of the batch that ended without being stored (it
    failed), so that a host waiting for that kernel compiles it itself."""

    def compiler(self) -> ArtifactCompiler[Any, Artifact]:
        """The half that may run on any thread."""
        ...

    def persists(self) -> bool:
        """Whether artifacts outlive the process. A persisting target's loaded kernels mirror
        the active environment, so the loader drops them when its generation changes: such a
        target also has ``generation() -> int``, which changes whenever its store does."""
        ...

    def stored(self, id: ArtifactId[Any]) -> Artifact | None:
        """Takes the artifact the store holds for ``id`` out of it; ``None`` when there is
        none (or no store)."""
        ...

    def stored_for_source(self, source: str) -> Artifact | None:
        """Takes the artifact another kernel finalized from ``source`` out of the store, for
        :meth:`store` to put back under the kernel asking; ``None`` when there is none."""
        ...

    def load(self, id: ArtifactId[Any], artifact: Artifact) -> Loaded:
        """Loads ``artifact`` on the device."""
        ...

    def store(self, id: ArtifactId[Any], artifact: Artifact, source: str | None) -> bool:
        """Keeps a loaded ``artifact`` under ``id`` and, when given, under ``source``. Whether
        the store took it; a refused write is routine (the cost is compiling again later)."""
        ...
