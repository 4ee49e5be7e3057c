"""A linking compiler: the kernels a batch compiles are finalized into parts and linked once."""

from __future__ import annotations

import threading

import pytest
from loader_fakes import Artifact, FakeKernel, FakeTarget, LinkingFakeCompiler

from cubejit.compile import KernelLoader, ServerLogger, recent_records
from cubejit.errors import CompilationError


@pytest.fixture
def linking() -> FakeTarget:
    return FakeTarget(fake_compiler=LinkingFakeCompiler())


def compiled(target: FakeTarget, kernels: list[FakeKernel]) -> KernelLoader:
    loader = KernelLoader(target, parallelism=3)
    for kernel in kernels:
        loader.enqueue(kernel, None)
    loader.compile_queued()
    return loader


def test_a_batch_links_its_parts_once_on_the_calling_thread_then_loads_and_stores_them(
    linking: FakeTarget,
) -> None:
    kernels = [FakeKernel(name, source=f"text of {name}") for name in ("a", "b", "c")]
    shared = FakeKernel("d", source="text of a")
    loader = compiled(linking, [*kernels, shared])

    compiler = linking.fake_compiler
    assert isinstance(compiler, LinkingFakeCompiler)
    [(names, thread)] = compiler.links
    assert sorted(names) == ["a", "b", "c"] and thread == threading.current_thread().name
    together = "+".join(names)
    for kernel in kernels:
        artifact = loader.get(kernel.artifact_id()).artifact
        assert artifact == Artifact(kernel.source, f"{kernel.name} in {together}")
        assert linking.by_source[kernel.source] == artifact
    assert loader.get(shared.artifact_id()).artifact == Artifact("text of a", f"a in {together}")
    outcomes = {r.name: r.outcome for r in recent_records()[-1].kernels}
    assert outcomes == {"a": "compiled", "b": "compiled", "c": "compiled", "d": "rekeyed"}


def test_parts_that_do_not_link_together_are_linked_alone_and_one_that_fails_fails_alone(
    linking: FakeTarget,
) -> None:
    compiler = linking.fake_compiler
    assert isinstance(compiler, LinkingFakeCompiler)
    compiler.unlinkable = {"b"}
    a, b, c = (FakeKernel(name, source=f"text of {name}") for name in "abc")
    same_as_b = FakeKernel("d", source="text of b")
    loader = compiled(linking, [a, b, c, same_as_b])

    together, *alone = [sorted(names) for names, _ in compiler.links]
    assert together == ["a", "b", "c"] and sorted(alone) == [["a"], ["b"], ["c"]]
    for kernel in (a, c):
        name = kernel.name
        assert loader.get(kernel.artifact_id()).artifact == Artifact(
            kernel.source, f"{name} in {name}"
        )
    for kernel in (b, same_as_b):
        with pytest.raises(CompilationError, match="kernel b: b does not link") as raised:
            loader.load(kernel, kernel.artifact_id(), ServerLogger())
        assert raised.value.kernel == "b"
    assert set(linking.by_id) == {a.artifact_id(), c.artifact_id()}


def test_a_batch_compiling_one_kernel_finalizes_it_whole_and_links_nothing(
    linking: FakeTarget,
) -> None:
    linking.by_id[FakeKernel("stored").artifact_id()] = Artifact("old", "stored")
    loader = compiled(linking, [FakeKernel("stored"), FakeKernel("new", source="new")])

    compiler = linking.fake_compiler
    assert isinstance(compiler, LinkingFakeCompiler)
    assert compiler.links == [] and compiler.finalized_names() == ["new"]
    assert loader.get(FakeKernel("new").artifact_id()).artifact == Artifact("new", "new")


def test_a_kernel_whose_part_fails_to_compile_fails_alone_and_the_others_are_linked(
    linking: FakeTarget,
) -> None:
    failure = CompilationError("cc: error: bad code")
    bad = FakeKernel("bad", source="bad text", fail_finalize=failure)
    good = [FakeKernel(name, source=f"text of {name}") for name in ("a", "b")]
    loader = compiled(linking, [bad, *good])

    compiler = linking.fake_compiler
    assert isinstance(compiler, LinkingFakeCompiler)
    [(names, _)] = compiler.links
    assert sorted(names) == ["a", "b"]
    with pytest.raises(CompilationError) as raised:
        loader.load(bad, bad.artifact_id(), ServerLogger())
    assert raised.value is failure
    assert all(loader.get(kernel.artifact_id()) is not None for kernel in good)
