"""Behaviours 7-10 of the loader: reusing an artifact finalized from the same source."""

from __future__ import annotations

import threading

import pytest
from loader_fakes import Artifact, FakeKernel, FakeTarget

from cubejit.compile import KernelLoader, ServerLogger, recent_records
from cubejit.errors import CompilationError


def load(loader: KernelLoader, kernel: FakeKernel):
    return loader.load(kernel, kernel.artifact_id(), ServerLogger())


def test_kernels_of_one_batch_lowering_to_one_source_finalize_it_once_and_share_it(
    target: FakeTarget,
):
    others_lowered = threading.Event()
    first = FakeKernel("first", source="same", on_finalize=lambda: others_lowered.wait(10))
    second = FakeKernel("second", source="same")
    third = FakeKernel("third", source="same", on_lower=others_lowered.set)
    loader = KernelLoader(target, parallelism=3)
    for kernel in (first, second, third):
        loader.enqueue(kernel, None)

    loader.compile_queued()

    assert target.fake_compiler.finalized_names() == ["first"]
    artifacts = {loader.get(k.artifact_id()).artifact for k in (first, second, third)}
    assert artifacts == {Artifact("same", "first")}
    assert set(target.by_id) == {k.artifact_id() for k in (first, second, third)}
    outcomes = {r.name: r.outcome for r in recent_records()[-1].kernels}
    assert outcomes == {"first": "compiled", "second": "rekeyed", "third": "rekeyed"}


def test_when_the_shared_finalize_fails_every_kernel_of_its_source_fails_with_its_error(
    target: FakeTarget,
):
    failure = CompilationError("cc: error: bad code")
    others_lowered = threading.Event()
    first = FakeKernel(
        "first", source="bad", fail_finalize=failure, on_finalize=lambda: others_lowered.wait(10)
    )
    second = FakeKernel("second", source="bad", fail_finalize=failure)
    third = FakeKernel("third", source="bad", on_lower=others_lowered.set)
    fine = FakeKernel("fine", source="good")
    loader = KernelLoader(target, parallelism=3)
    for kernel in (first, second, third, fine):
        loader.enqueue(kernel, None)

    loader.compile_queued()

    assert sorted(target.fake_compiler.finalized_names()) == ["fine", "first"]
    for kernel in (first, second, third):
        with pytest.raises(CompilationError) as raised:
            load(loader, kernel)
        assert raised.value is failure
    assert loader.get(fine.artifact_id()) is not None
    assert target.fake_compiler.finalized_names().count("first") == 1


def test_a_source_the_store_holds_serves_every_kernel_lowering_to_it_and_none_finalizes(
    target: FakeTarget,
):
    held = Artifact("known", "an earlier build")
    target.by_source["known"] = held
    kernels = [FakeKernel(f"k{i}", source="known") for i in range(3)]
    loader = KernelLoader(target, parallelism=2)
    for kernel in kernels:
        loader.enqueue(kernel, None)

    loader.compile_queued()

    assert target.fake_compiler.finalizations == []
    assert sorted(target.fake_compiler.lowered_names()) == ["k0", "k1", "k2"]
    assert all(loader.get(k.artifact_id()).artifact == held for k in kernels)
    assert all(target.by_id[k.artifact_id()] == held for k in kernels)
    assert recent_records()[-1].rekeyed == 3


def test_without_persistence_every_kernel_finalizes_its_own_on_the_worker_that_lowered_it():
    target = FakeTarget(persisting=False)
    kernels = [FakeKernel(f"k{i}", source="same") for i in range(4)]
    loader = KernelLoader(target, parallelism=2)
    for kernel in kernels:
        loader.enqueue(kernel, None)

    loader.compile_queued()

    lowered_on = dict(target.fake_compiler.lowerings)
    finalized_on = dict(target.fake_compiler.finalizations)
    assert lowered_on == finalized_on
    assert len(target.fake_compiler.finalizations) == 4
    assert target.called("stored_for_source") == []


def test_a_kernel_without_a_source_finalizes_right_where_it_was_lowered(target: FakeTarget):
    kernels = [FakeKernel(f"k{i}") for i in range(4)]
    loader = KernelLoader(target, parallelism=2)
    for kernel in kernels:
        loader.enqueue(kernel, None)

    loader.compile_queued()

    assert dict(target.fake_compiler.lowerings) == dict(target.fake_compiler.finalizations)
    assert target.called("stored_for_source") == []
    assert all(loader.get(k.artifact_id()) is not None for k in kernels)
