"""The two halves of a backend's compilation, split by where each may run.

:class:`ArtifactCompiler` runs on any thread, so several kernels compile at once: it lowers a
kernel to backend source and finalizes that source into what the device loads.
:class:`CompilationTarget` runs only on the thread that owns the device: it holds the
compilation store and loads artifacts. Both are generic over the seed's associated types: the
*variant* a launch adds to a kernel id, what lowering makes, the *artifact* finalizing makes and
what loading it makes. The :class:`~cubejit.compile.loader.KernelLoader` drives both.

A backend's target subclasses :class:`CompilationTarget` to inherit the defaults of its
optional methods (``stored_many``, ``claim``, ``abandon``, ``discard``, ``generation``); a
compiler need not subclass :class:`ArtifactCompiler`. A compiler that is also a
:class:`LinkingCompiler` has the kernels a batch compiles finalized into parts and joined into
one artifact, which a warm process loads once for all of them.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from cubejit.compile.id import ArtifactId, KernelId

if TYPE_CHECKING:
    from cubejit.compile.recording import CompilationRecording, ServerLogger

Variant = TypeVar("Variant")
Lowered = TypeVar("Lowered")
Artifact = TypeVar("Artifact")
ArtifactOut = TypeVar("ArtifactOut", covariant=True)
LoweredIn = TypeVar("LoweredIn", contravariant=True)
LoadedOut = TypeVar("LoadedOut", covariant=True)


class Flight(enum.Enum):
    """Who compiles a kernel the store lacks, when hosts share the store (single flight)."""

    HERE = "here"
    """This host: it holds the kernel's claim, or the store is not shared."""
    ELSEWHERE = "elsewhere"
    """Another host compiles it now: the batch waits for it last, once its own kernels are
    done (so two hosts never wait on each other's claims)."""


@runtime_checkable
class Kernel(Protocol):
    """What the loader needs of a kernel: its id. Only the compiler looks further."""

    def id(self) -> KernelId: ...


class ArtifactCompiler(Protocol[Variant, Lowered, ArtifactOut]):
    """The half of a backend's compilation that may run on any thread.

    Shared by every worker of a batch at once, so it must be thread-safe. Lowering is Python
    and holds the GIL; finalizing calls a platform compiler (a subprocess, NVRTC) that releases
    it, which is where worker threads buy real parallelism.
    """

    def lower(
        self,
        kernel: Any,
        id: ArtifactId[Variant],
        recording: CompilationRecording,
        logger: ServerLogger,
    ) -> Lowered:
        """Validates ``kernel`` (a :class:`Kernel` the backend knows further: its specs)
        against the device, expands it to IR and lowers it to backend source, telling
        ``recording`` its IR (``defined``) and source (``source``).
        Raises :class:`~cubejit.errors.ValidationError` for a kernel the device cannot run."""
        ...

    @staticmethod
    def source(lowered: Lowered) -> str | None:
        """The text an artifact finalized from ``lowered`` can be reused by, when finalizing is
        slow enough that reuse across kernel ids pays; ``None`` finalizes every time."""
        ...

    def finalize(self, id: ArtifactId[Variant], lowered: Lowered) -> ArtifactOut:
        """Turns ``lowered`` into what the device loads (runs the platform compiler).
        Raises :class:`~cubejit.errors.CompilationError` with the compiler's log."""
        ...


@runtime_checkable
class LinkingCompiler(Protocol[Variant, LoweredIn, Artifact]):
    """A compiler whose artifacts can be joined: a batch that compiles several kernels
    finalizes each into a part (:meth:`finalize_part`, on the workers) and, once its own
    kernels are done, joins the parts in one :meth:`link` (on the calling thread). Loading one
    joined artifact for a batch's kernels, instead of one artifact a kernel, is what makes a
    warm process's batch cheap (one library opened, one value decompressed)."""

    def finalize_part(self, id: ArtifactId[Variant], lowered: LoweredIn) -> Artifact:
        """Turns ``lowered`` into a part that only :meth:`link` makes loadable. Raises as
        ``finalize`` does."""
        ...

    def link(self, parts: Sequence[tuple[ArtifactId[Variant], Artifact]]) -> list[Artifact]:
        """The loadable artifacts of ``parts``, in their order, sharing one library where
        several can (one part: a library of its own). Raises when they do not link together:
        the batch then links each part alone, so that a part that fails fails only its own
        kernels."""
        ...


class CompilationTarget(Protocol[Variant, Artifact, LoadedOut]):
    """The half of a backend's compilation that runs only on the thread owning the device:
    the compilation store and the loads."""

    def compiler(self) -> ArtifactCompiler[Variant, Any, Artifact]:
        """The half that may run on any thread."""
        ...

    def persists(self) -> bool:
        """Whether artifacts outlive the process. A persisting target's loaded kernels mirror
        the active environment, so the loader drops them when :meth:`generation` changes."""
        ...

    def generation(self) -> int:
        """A number that changes whenever the store does (an environment switch); read on
        every look-up of a loaded kernel, so cheap. A target without a store never changes."""
        return 0

    def stored(self, id: ArtifactId[Variant]) -> Artifact | None:
        """The artifact the store holds for ``id``; ``None`` when there is none (or no
        store)."""
        ...

    def stored_many(
        self, ids: Sequence[ArtifactId[Variant]]
    ) -> dict[ArtifactId[Variant], Artifact]:
        """The artifact the store holds for each of ``ids`` that has one: a batch's look-up,
        which a store answers with one read. By default, :meth:`stored` for each."""
        found = {}
        for id in ids:
            artifact = self.stored(id)
            if artifact is not None:
                found[id] = artifact
        return found

    def claim(self, id: ArtifactId[Variant]) -> Artifact | Flight:
        """After a miss, one look that never waits, for a store shared by several hosts: the
        artifact when another host stored it meanwhile; :attr:`Flight.HERE` when this host
        compiles it (then :meth:`store` or :meth:`abandon` ends the claim);
        :attr:`Flight.ELSEWHERE` when another host is compiling it. By default ``HERE``."""
        return Flight.HERE

    def wait_for(self, id: ArtifactId[Variant]) -> Artifact | None:
        """The artifact of a kernel :meth:`claim` found :attr:`Flight.ELSEWHERE`, once that
        host stored it (this may wait); ``None`` when this host compiles it after all. By
        default ``None``."""
        return None

    def abandon(self, id: ArtifactId[Variant]) -> None:
        """``id`` ended its batch without being stored (it failed): a host of a shared store
        waiting for it compiles it itself. By default nothing."""
        return None

    def discard(self, id: ArtifactId[Variant] | None, source: str | None, why: str) -> None:
        """The artifact stored for ``id`` (or for ``source``) decoded intact but could not be
        loaded: the store drops it, so that the fresh compile replaces it and the warning and
        the recompile happen once. By default nothing."""
        return None

    def stored_for_source(self, source: str) -> Artifact | None:
        """The artifact another kernel finalized from ``source``, for :meth:`store` to keep
        under the kernel asking too; ``None`` when there is none."""
        ...

    def load(self, id: ArtifactId[Variant], artifact: Artifact) -> LoadedOut:
        """Loads ``artifact`` on the device."""
        ...

    def store(self, id: ArtifactId[Variant], artifact: Artifact, source: str | None) -> bool:
        """Keeps a loaded ``artifact`` under ``id`` and, when given, under ``source``. Whether
        the store took it; a refused write is routine (the cost is compiling again later)."""
        ...
