"""Behaviour 13 of the loader: loaded kernels mirror the active environment's store."""

from __future__ import annotations

from loader_fakes import FakeKernel, FakeTarget

from cubejit.compile import KernelLoader, ServerLogger


def load(loader: KernelLoader, kernel: FakeKernel):
    return loader.load(kernel, kernel.artifact_id(), ServerLogger())


def test_an_environment_switch_drops_every_loaded_kernel_of_a_persisting_target(
    target: FakeTarget,
):
    loader = KernelLoader(target, parallelism=2)
    a, b = FakeKernel("a"), FakeKernel("b")
    load(loader, a)
    load(loader, b)

    target.generation_now += 1

    assert loader.get(a.artifact_id()) is None
    assert loader.get(b.artifact_id()) is None
    load(loader, a)
    assert target.called("load") == ["a", "b", "a"]
    assert loader.get(a.artifact_id()) is not None


def test_a_kernel_loaded_during_an_environment_switch_loads_again(target: FakeTarget):
    loader = KernelLoader(target, parallelism=1)
    kernel = FakeKernel("k")

    def switch_while_loading(_id: object) -> None:
        target.on_load = None
        target.generation_now += 1

    target.on_load = switch_while_loading

    assert load(loader, kernel).id == kernel.artifact_id()
    assert loader.get(kernel.artifact_id()) is None
    load(loader, kernel)
    assert target.called("load") == ["k", "k"]
    assert loader.get(kernel.artifact_id()) is not None


def test_a_target_that_does_not_persist_keeps_its_loaded_kernels_whatever_its_generation():
    target = FakeTarget(persisting=False)
    loader = KernelLoader(target, parallelism=1)
    kernel = FakeKernel("k")
    load(loader, kernel)

    target.generation_now += 1

    assert loader.get(kernel.artifact_id()) is not None
