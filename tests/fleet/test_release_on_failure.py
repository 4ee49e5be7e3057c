"""A kernel that fails gives its claim back: the loader tells the target which kernels of a
batch it will not store, so that hosts waiting for them compile them instead of waiting out a
lease."""

from __future__ import annotations

from typing import Any

from cubejit.compile.id import ArtifactId, KernelId
from cubejit.compile.loader import KernelLoader
from cubejit.compile.protocols import CompilationTarget, Flight


class Kernel:
    def __init__(self, name: str) -> None:
        self.name = name

    def id(self) -> KernelId:
        return KernelId(self.name)


class Compiler:
    def lower(self, kernel: Kernel, id: ArtifactId[Any], recording: Any, logger: Any) -> str:
        if kernel.name == "fails to lower":
            raise ValueError(kernel.name)
        return kernel.name

    @staticmethod
    def source(lowered: str) -> str:
        return f"text of {lowered}"

    def finalize(self, id: ArtifactId[Any], lowered: str) -> str:
        if lowered == "fails to finalize":
            raise ValueError(lowered)
        return lowered


class ClaimingTarget(CompilationTarget[Any, str, str]):
    """A persisting target whose every miss is a claim, like one behind a fleet's store."""

    def __init__(self) -> None:
        self.abandoned: list[str] = []
        self.stored_ids: list[str] = []

    def compiler(self) -> Compiler:
        return Compiler()

    def persists(self) -> bool:
        return True

    def stored(self, id: ArtifactId[Any]) -> None:
        return None

    def claim(self, id: ArtifactId[Any]) -> Flight:
        return Flight.HERE

    def stored_for_source(self, source: str) -> None:
        return None

    def load(self, id: ArtifactId[Any], artifact: str) -> str:
        if artifact == "fails to load":
            raise OSError(artifact)
        return artifact

    def store(self, id: ArtifactId[Any], artifact: str, source: str | None) -> bool:
        self.stored_ids.append(id.kernel.name)
        return True

    def abandon(self, id: ArtifactId[Any]) -> None:
        self.abandoned.append(id.kernel.name)


def test_every_kernel_of_a_batch_that_fails_is_abandoned_and_no_other():
    target = ClaimingTarget()
    loader = KernelLoader(target, parallelism=2)
    names = ["works", "fails to lower", "fails to finalize", "fails to load", "works too"]
    for name in names:
        loader.enqueue(Kernel(name), None)
    loader.compile_queued()
    assert sorted(target.abandoned) == ["fails to finalize", "fails to load", "fails to lower"]
    assert sorted(target.stored_ids) == ["works", "works too"]
