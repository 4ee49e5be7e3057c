"""Behaviours 11 and 12 of the loader, and what its workers buy: finalizes that run at once,
alongside the next lowering."""

from __future__ import annotations

import threading

import pytest
from loader_fakes import FakeKernel, FakeTarget

from cubejit.compile import KernelLoader, ServerLogger, recent_records
from cubejit.errors import ValidationError


class KernelTrouble(Exception):
    pass


def load(loader: KernelLoader, kernel: FakeKernel):
    return loader.load(kernel, kernel.artifact_id(), ServerLogger())


@pytest.mark.parametrize("phase", ["lower", "finalize"])
def test_an_exception_raised_in_a_worker_reaches_the_caller_of_load_as_itself(
    target: FakeTarget, phase: str
):
    trouble = KernelTrouble(f"cannot {phase} this one")
    kernel = FakeKernel("k", source="text", **{f"fail_{phase}": trouble})
    loader = KernelLoader(target, parallelism=2)

    with pytest.raises(KernelTrouble, match=f"^cannot {phase} this one$") as raised:
        load(loader, kernel)

    assert raised.value is trouble
    assert target.fake_compiler.lowerings[0][1] != threading.current_thread().name


def test_a_validation_error_from_lower_fails_only_its_kernel(target: FakeTarget):
    refused = ValidationError("cube_dim 2048 is beyond the device's 1024")
    bad, good = FakeKernel("bad", fail_lower=refused), FakeKernel("good", source="g")
    loader = KernelLoader(target, parallelism=2)
    loader.enqueue(bad, None)

    assert load(loader, good).id == good.artifact_id()
    with pytest.raises(ValidationError) as raised:
        load(loader, bad)
    assert raised.value is refused
    assert target.fake_compiler.finalized_names() == ["good"]


def test_the_target_is_touched_only_on_the_calling_thread_and_the_compiler_only_on_workers(
    target: FakeTarget,
):
    seed = KernelLoader(target, parallelism=1)
    load(seed, FakeKernel("stored", source="s0"))
    target.calls.clear()
    target.fake_compiler.lowerings.clear()
    target.fake_compiler.finalizations.clear()
    kernels = [FakeKernel("stored", source="s0")]
    kernels += [FakeKernel(f"k{i}", source=f"s{i % 2 + 1}") for i in range(4)]
    loader = KernelLoader(target, parallelism=3)
    for kernel in kernels:
        loader.enqueue(kernel, None)

    loader.compile_queued()

    caller = threading.current_thread().name
    assert {thread for _, _, thread in target.calls} == {caller}
    worker_calls = target.fake_compiler.lowerings + target.fake_compiler.finalizations
    assert caller not in {thread for _, thread in worker_calls}
    methods = [(method, name) for method, name, _ in target.calls]
    lookups = [("stored", k.name) for k in kernels]
    assert methods[: len(kernels)] == lookups, "every id is looked up first, in order"
    assert methods[len(kernels)] == ("load", "stored")
    for kernel in kernels[1:]:
        assert methods.index(("load", kernel.name)) < methods.index(("store", kernel.name))
    assert ("store", "stored") not in methods


def test_the_finalize_of_one_kernel_runs_while_the_next_is_lowering(target: FakeTarget):
    first_finalizing = threading.Event()
    waited = []
    first = FakeKernel("first", source="a", on_finalize=first_finalizing.set)
    second = FakeKernel(
        "second", source="b", on_lower=lambda: waited.append(first_finalizing.wait(10))
    )
    loader = KernelLoader(target, parallelism=2)
    loader.enqueue(first, None)

    load(loader, second)

    assert waited == [True]
    assert target.fake_compiler.finalized_names() == ["first", "second"]


def test_finalizes_run_at_the_same_time_on_several_workers(target: FakeTarget):
    both_finalizing = threading.Barrier(2, timeout=10)
    kernels = [
        FakeKernel(f"k{i}", source=f"s{i}", on_finalize=both_finalizing.wait) for i in range(2)
    ]
    loader = KernelLoader(target, parallelism=2)
    loader.enqueue(kernels[0], None)

    load(loader, kernels[1])

    assert loader.get(kernels[0].artifact_id()) is not None
    assert len(set(dict(target.fake_compiler.finalizations).values())) == 2
    assert recent_records()[-1].threads == 2
