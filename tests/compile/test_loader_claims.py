"""Single flight as phases of a batch: the store is read once, each missing kernel is claimed
without waiting, this host's own kernels compile and store first, and the kernels another
host is compiling are waited for last."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loader_fakes import Artifact, FakeKernel, FakeTarget

from cubejit.compile import KernelLoader
from cubejit.compile.id import ArtifactId
from cubejit.compile.protocols import Flight


@dataclass
class SharedTarget(FakeTarget):
    """A target whose store another host shares: ``theirs`` are being compiled elsewhere;
    ``arrives`` is what waiting for one of them yields (``None``: it never came)."""

    theirs: set[str] = field(default_factory=set)
    arrives: dict[str, Artifact | None] = field(default_factory=dict)

    def claim(self, id: ArtifactId[Any]) -> Artifact | Flight:
        self._note("claim", id.kernel.name)
        return Flight.ELSEWHERE if id.kernel.name in self.theirs else Flight.HERE

    def wait_for(self, id: ArtifactId[Any]) -> Artifact | None:
        self._note("wait_for", id.kernel.name)
        return self.arrives.get(id.kernel.name)


def test_a_kernel_another_host_compiles_is_waited_for_after_this_hosts_own_are_stored():
    target = SharedTarget(theirs={"b"}, arrives={"b": Artifact("text b", "the other host")})
    loader = KernelLoader(target, parallelism=2)
    for name in ("a", "b", "c"):
        loader.enqueue(FakeKernel(name), None)
    loader.compile_queued()
    methods = [(m, what) for m, what, _ in target.calls]
    assert [m for m, _ in methods[:3]] == ["stored", "stored", "stored"], "one look-up first"
    assert ("claim", "a") in methods and ("claim", "b") in methods
    waited = methods.index(("wait_for", "b"))
    assert {what for m, what in methods[:waited] if m == "store"} == {"a", "c"}
    assert sorted(target.fake_compiler.lowered_names()) == ["a", "c"]
    loaded = loader.get(FakeKernel("b").artifact_id())
    assert loaded is not None and loaded.artifact.finalized_for == "the other host"


def test_a_kernel_whose_other_host_gave_up_is_compiled_here_at_the_end():
    target = SharedTarget(theirs={"b"})
    loader = KernelLoader(target, parallelism=1)
    for name in ("a", "b"):
        loader.enqueue(FakeKernel(name), None)
    loader.compile_queued()
    assert target.fake_compiler.lowered_names() == ["a", "b"]
    assert target.called("store") == ["a", "b"]
    assert loader.get(FakeKernel("b").artifact_id()) is not None
