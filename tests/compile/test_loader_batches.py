"""Behaviours 1-6 of the loader: queues, batches, workers, failures."""

from __future__ import annotations

import threading

import pytest
from loader_fakes import FakeKernel, FakeTarget

from cubejit import config
from cubejit.compile import KernelLoader, ServerLogger, recent_records
from cubejit.errors import CompilationError


def load(loader: KernelLoader, kernel: FakeKernel):
    return loader.load(kernel, kernel.artifact_id(), ServerLogger())


def test_queuing_compiles_nothing_and_a_load_compiles_the_queue_with_its_kernel_in_one_batch(
    target: FakeTarget,
):
    loader = KernelLoader(target, parallelism=2)
    a, b, c = FakeKernel("a"), FakeKernel("b"), FakeKernel("c")
    loader.enqueue(a, None)
    loader.enqueue(b, None)
    assert target.fake_compiler.lowerings == []
    assert target.calls == []
    before = recent_records()

    loaded = load(loader, c)

    assert loaded.id == c.artifact_id()
    assert sorted(target.fake_compiler.lowered_names()) == ["a", "b", "c"]
    after = recent_records()
    assert all(r is not after[-1] for r in before), "a batch was recorded"
    assert [id(r) for r in after[-2:-1]] == [id(r) for r in before[-1:]], "only one"
    assert recent_records()[-1].kernels_asked == 3
    assert loader.get(a.artifact_id()) is not None
    assert loader.get(b.artifact_id()) is not None


def test_compile_queued_compiles_the_queue_without_a_launch(target: FakeTarget):
    loader = KernelLoader(target, parallelism=2)
    kernels = [FakeKernel(f"k{i}") for i in range(3)]
    for kernel in kernels:
        loader.enqueue(kernel, None)

    loader.compile_queued()

    assert sorted(target.fake_compiler.finalized_names()) == ["k0", "k1", "k2"]
    assert all(loader.get(k.artifact_id()) is not None for k in kernels)
    loader.compile_queued()
    assert len(target.fake_compiler.lowerings) == 3


def test_a_batch_runs_min_of_parallelism_and_missing_workers_each_taking_the_next_kernel(
    target: FakeTarget,
):
    last_lowered = threading.Event()
    held = []

    def hold_until_the_others_are_lowered() -> None:
        held.append(last_lowered.wait(timeout=10))

    first = FakeKernel("first", on_lower=hold_until_the_others_are_lowered)
    others = [FakeKernel(f"k{i}") for i in range(4)]
    others[-1].on_lower = last_lowered.set
    loader = KernelLoader(target, parallelism=2)
    for kernel in [first, *others]:
        loader.enqueue(kernel, None)

    loader.compile_queued()

    assert held == [True], "one worker lowered every other kernel while the first was held"
    threads = dict(target.fake_compiler.lowerings)
    assert len({threads[k.name] for k in others}) == 1
    assert threads["first"] != threads["k0"]
    assert recent_records()[-1].threads == 2


def test_a_batch_starts_no_more_workers_than_kernels_the_store_does_not_hold(target: FakeTarget):
    stored = [FakeKernel(f"stored{i}") for i in range(3)]
    seed = KernelLoader(target, parallelism=1)
    for kernel in stored:
        load(seed, kernel)
    loader = KernelLoader(target, parallelism=8)
    for kernel in [*stored, FakeKernel("new0"), FakeKernel("new1")]:
        loader.enqueue(kernel, None)

    loader.compile_queued()

    record = recent_records()[-1]
    assert (record.threads, record.compiled, record.from_store) == (2, 2, 3)


def test_a_kernel_queued_twice_or_queued_when_loaded_compiles_once(target: FakeTarget):
    loader = KernelLoader(target, parallelism=2)
    a, b = FakeKernel("a"), FakeKernel("b")
    load(loader, a)
    loader.enqueue(a, None)
    loader.enqueue(b, None)
    loader.enqueue(b, None)

    loader.compile_queued()
    load(loader, b)

    assert sorted(target.fake_compiler.lowered_names()) == ["a", "b"]
    assert sorted(target.fake_compiler.finalized_names()) == ["a", "b"]


def test_a_failing_queued_kernel_spares_the_others_and_its_load_raises_once_then_retries(
    target: FakeTarget,
):
    failure = CompilationError("the C compiler refused bad")
    bad = FakeKernel("bad", fail_finalize=failure)
    good = [FakeKernel("good0"), FakeKernel("good1")]
    loader = KernelLoader(target, parallelism=2)
    for kernel in [bad, *good]:
        loader.enqueue(kernel, None)

    loader.compile_queued()

    assert all(loader.get(k.artifact_id()) is not None for k in good)
    with pytest.raises(CompilationError) as raised:
        load(loader, bad)
    assert raised.value is failure
    assert target.fake_compiler.lowered_names().count("bad") == 1
    with pytest.raises(CompilationError):
        load(loader, bad)
    assert target.fake_compiler.lowered_names().count("bad") == 2
    bad.fail_finalize = None
    assert load(loader, bad).id == bad.artifact_id()


def test_loading_a_loaded_kernel_still_compiles_a_non_empty_queue_first(target: FakeTarget):
    loader = KernelLoader(target, parallelism=2)
    a, b = FakeKernel("a"), FakeKernel("b")
    first = load(loader, a)
    loader.enqueue(b, None)

    assert load(loader, a) is first
    assert loader.get(b.artifact_id()) is not None
    assert target.fake_compiler.lowered_names() == ["a", "b"]


def test_parallelism_comes_from_the_setting_else_the_cpu_count_and_is_never_below_one(
    target: FakeTarget, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(config, "_current", config.settings())
    config.override(parallelism=3)
    assert KernelLoader(target).parallelism == 3
    config.override(parallelism=None)
    monkeypatch.setattr("os.cpu_count", lambda: 5)
    assert KernelLoader(target).parallelism == 5
    monkeypatch.setattr("os.cpu_count", lambda: None)
    assert KernelLoader(target).parallelism == 1
    assert KernelLoader(target, parallelism=0).parallelism == 1
    assert KernelLoader(target, parallelism=4).target is target
