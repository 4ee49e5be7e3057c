"""A fake compiler and target for the loader's tests.

They count lowerings, finalizations and target calls, note the thread of each, fail on demand,
and let a test choose each kernel's source and run a hook inside ``lower`` or ``finalize`` (to
hold a worker on an Event or a Barrier).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cubejit.compile.id import ArtifactId, KernelId
from cubejit.compile.protocols import CompilationTarget
from cubejit.errors import CompilationError


@dataclass(eq=False)
class FakeKernel:
    """A kernel to the loader: an id. To the fake compiler: a source and failures."""

    name: str
    source: str | None = None
    fail_lower: BaseException | None = None
    fail_finalize: BaseException | None = None
    on_lower: Callable[[], None] | None = None
    on_finalize: Callable[[], None] | None = None

    def id(self) -> KernelId:
        return KernelId(self.name)

    def artifact_id(self, variant: Any = None) -> ArtifactId[Any]:
        return ArtifactId(self.id(), variant)


@dataclass(frozen=True)
class Lowered:
    kernel: FakeKernel
    source: str | None


@dataclass(frozen=True)
class Artifact:
    source: str | None
    finalized_for: str


@dataclass(frozen=True)
class Loaded:
    id: ArtifactId[Any]
    artifact: Artifact


class FakeCompiler:
    def __init__(self) -> None:
        self.lowerings: list[tuple[str, str]] = []
        self.finalizations: list[tuple[str, str]] = []

    def lower(self, kernel: FakeKernel, id: ArtifactId[Any], recording: Any, logger: Any) -> Any:
        self.lowerings.append((kernel.name, threading.current_thread().name))
        if kernel.on_lower is not None:
            kernel.on_lower()
        if kernel.fail_lower is not None:
            raise kernel.fail_lower
        recording.defined(f"ir of {kernel.name}")
        if kernel.source is not None:
            recording.source(kernel.source)
        return Lowered(kernel, kernel.source)

    @staticmethod
    def source(lowered: Lowered) -> str | None:
        return lowered.source

    def finalize(self, id: ArtifactId[Any], lowered: Lowered) -> Artifact:
        kernel = lowered.kernel
        self.finalizations.append((kernel.name, threading.current_thread().name))
        if kernel.on_finalize is not None:
            kernel.on_finalize()
        if kernel.fail_finalize is not None:
            raise kernel.fail_finalize
        return Artifact(lowered.source, kernel.name)

    def lowered_names(self) -> list[str]:
        return [name for name, _ in self.lowerings]

    def finalized_names(self) -> list[str]:
        return [name for name, _ in self.finalizations]


class LinkingFakeCompiler(FakeCompiler):
    """A compiler that links: parts are finalized like artifacts and linked in one call, each
    linked artifact naming every kernel of its link."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[list[str], str]] = []
        """The kernels of each link, and the thread it ran on."""
        self.unlinkable: set[str] = set()
        """The kernels whose parts fail to link."""

    def finalize_part(self, id: ArtifactId[Any], lowered: Lowered) -> Artifact:
        return self.finalize(id, lowered)

    def link(self, parts: Sequence[tuple[ArtifactId[Any], Artifact]]) -> list[Artifact]:
        names = [id.kernel.name for id, _ in parts]
        self.links.append((names, threading.current_thread().name))
        for _, part in parts:
            if part.finalized_for in self.unlinkable:
                raise CompilationError(f"{part.finalized_for} does not link")
        together = "+".join(names)
        return [Artifact(part.source, f"{part.finalized_for} in {together}") for _, part in parts]


@dataclass
class FakeTarget(CompilationTarget[Any, Artifact, Loaded]):
    """An in-process store by id and by source, and loads that wrap the artifact."""

    persisting: bool = True
    fail_load: set[str] = field(default_factory=set)
    on_load: Callable[[ArtifactId[Any]], None] | None = None
    generation_now: int = 0
    by_id: dict[ArtifactId[Any], Artifact] = field(default_factory=dict)
    by_source: dict[str, Artifact] = field(default_factory=dict)
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    """(method, kernel name or source, thread) of every call that touches the target."""
    fake_compiler: FakeCompiler = field(default_factory=FakeCompiler)

    def _note(self, method: str, what: str) -> None:
        self.calls.append((method, what, threading.current_thread().name))

    def compiler(self) -> FakeCompiler:
        return self.fake_compiler

    def persists(self) -> bool:
        return self.persisting

    def generation(self) -> int:
        return self.generation_now

    def stored(self, id: ArtifactId[Any]) -> Artifact | None:
        self._note("stored", id.kernel.name)
        return self.by_id.get(id)

    def stored_for_source(self, source: str) -> Artifact | None:
        self._note("stored_for_source", source)
        return self.by_source.get(source)

    def load(self, id: ArtifactId[Any], artifact: Artifact) -> Loaded:
        self._note("load", id.kernel.name)
        if self.on_load is not None:
            self.on_load(id)
        if id.kernel.name in self.fail_load:
            raise RuntimeError(f"the device refused {id.kernel.name}")
        return Loaded(id, artifact)

    def store(self, id: ArtifactId[Any], artifact: Artifact, source: str | None) -> bool:
        self._note("store", id.kernel.name)
        self.by_id[id] = artifact
        if source is not None:
            self.by_source[source] = artifact
        return True

    def called(self, method: str) -> list[str]:
        return [what for m, what, _ in self.calls if m == method]
