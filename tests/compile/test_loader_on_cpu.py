"""The loader's behaviours (DESIGN.md 1-12 and 14) again through the CPU backend: real kernels,
the real C compiler, compiles counted by :data:`~cubejit.backends.cpu.compiler_runs`.

Each test has an empty store and clients of its own, so every count is the test's alone. The
kernels are small and few: the C compiler runs about twenty times for the whole module.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cubejit as cj
from cubejit import config
from cubejit.backends.cpu import CpuClient, CpuCompiler, CpuTarget, compiler_runs
from cubejit.backends.cpu.launcher import MAX_ALIGN
from cubejit.compile import (
    ArtifactId,
    BatchRecord,
    CompilationRecording,
    KernelLoader,
    ServerLogger,
    add_record_sink,
    recent_records,
    remove_record_sink,
)
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.errors import CompilationError, ValidationError

N = 1000
CUBE = 128
TOO_WIDE = 2048
"""A cube_dim beyond the CPU's limit of 1024 units along x."""


@cj.kernel
def affine(x: cj.Array[cj.f32], out: cj.Array[cj.f32], k: cj.Comptime[int], tag: cj.Comptime[int]):
    # out = x * k + 1; ``tag`` changes the kernel's id, never its C text.
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * cj.f32(k) + 1.0


@cj.kernel
def fragile(x: cj.Array[cj.f32], out: cj.Array[cj.f32], broken: cj.Comptime[bool]):
    # ``broken`` divides an f32 by a u32: a CompilationError when the kernel is defined.
    i = cj.ABSOLUTE_POS
    if i < out.len():
        if broken:
            out[i] = x[i] / i
        else:
            out[i] = x[i] - 1.0


@pytest.fixture(autouse=True)
def empty_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty, persisting store for the test; the settings before it come back after."""
    monkeypatch.setattr(config, "_current", config.settings())
    root = tmp_path / "store"
    config.override(cache_dir=root, compilation_cache=True, record_level="basic")
    ENVIRONMENTS.reset()
    yield root
    ENVIRONMENTS.reset()


@pytest.fixture
def batches() -> Iterator[list[BatchRecord]]:
    """The batch records published during the test, oldest first."""
    kept: list[BatchRecord] = []
    add_record_sink(kept.append)
    yield kept
    remove_record_sink(kept.append)


def client(parallelism: int = 2, target: CpuTarget | None = None) -> CpuClient:
    """A CPU client with a loader of its own over the active store."""
    target = target if target is not None else CpuTarget()
    return CpuClient(target=target, loader=KernelLoader(target, parallelism=parallelism))


def artifact(spec: Any) -> ArtifactId[int]:
    """The artifact id of ``spec`` for the client's 64-byte aligned buffers."""
    return ArtifactId(spec.id(), MAX_ALIGN)


def run_affine(cpu: CpuClient, k: int, tag: int = 0, cube_dim: int = CUBE) -> None:
    """Launches ``affine`` on random data and checks the result against numpy."""
    x = np.random.default_rng(k * 100 + tag).random(N, dtype=np.float32)
    out = cpu.empty(N, cj.f32)
    affine.launch(cpu, cj.cdiv(N, cube_dim), cube_dim, cpu.to_device(x), out, k=k, tag=tag)
    np.testing.assert_allclose(cpu.read(out), x * np.float32(k) + np.float32(1), rtol=1e-6)


def run_fragile(cpu: CpuClient, broken: bool) -> None:
    x = np.random.default_rng(7).random(N, dtype=np.float32)
    out = cpu.empty(N, cj.f32)
    fragile.launch(cpu, cj.cdiv(N, CUBE), CUBE, cpu.to_device(x), out, broken=broken)
    np.testing.assert_allclose(cpu.read(out), x - np.float32(1), rtol=1e-6)


def outcomes(batch: BatchRecord) -> list[str | None]:
    return sorted(r.outcome for r in batch.kernels)


def test_queuing_compiles_nothing_and_a_launch_compiles_the_queue_in_one_batch(
    batches: list[BatchRecord],
) -> None:
    cpu = client()
    before = compiler_runs.count
    affine.prepare(cpu, CUBE, k=2, tag=0)
    affine.prepare(cpu, CUBE, k=3, tag=0)
    assert compiler_runs.count == before and batches == []
    run_affine(cpu, k=4)
    assert compiler_runs.count - before == 3
    [batch] = batches
    assert (batch.kernels_asked, batch.compiled) == (3, 3)
    run_affine(cpu, k=2)
    run_affine(cpu, k=3)
    assert compiler_runs.count - before == 3 and len(batches) == 1


def test_compile_queued_compiles_the_queue_without_a_launch(batches: list[BatchRecord]) -> None:
    cpu = client()
    before = compiler_runs.count
    affine.prepare(cpu, CUBE, k=5, tag=0)
    cpu.compile_queued()
    assert compiler_runs.count - before == 1
    assert cpu.loader.get(artifact(affine.specialize(CUBE, k=5, tag=0))) is not None
    run_affine(cpu, k=5)
    assert compiler_runs.count - before == 1 and len(batches) == 1


def test_a_batch_is_one_phase_whose_workers_each_take_the_next_kernel(
    batches: list[BatchRecord],
) -> None:
    cpu = client(parallelism=2)
    for k in (6, 7, 8):
        affine.prepare(cpu, CUBE, k=k, tag=0)
    cpu.compile_queued()
    [batch] = batches
    assert batch.threads == 2 and batch.compiled == 3
    finalized = [r.finalize for r in batch.kernels if r.finalize is not None]
    assert {p.thread for p in finalized} == {"cubejit-compile-0", "cubejit-compile-1"}
    by_thread = {p.thread: p for p in finalized}
    first, second = by_thread.values()
    assert first.start < second.end and second.start < first.end, "the workers overlapped"

    again = client(parallelism=2)
    affine.prepare(again, CUBE, k=6, tag=0)
    affine.prepare(again, CUBE, k=9, tag=0)
    again.compile_queued()
    assert batches[-1].threads == 1, "one worker for the one kernel missing from the store"
    assert (batches[-1].compiled, batches[-1].from_store) == (1, 1)


def test_a_kernel_queued_twice_or_queued_when_loaded_compiles_once(
    batches: list[BatchRecord],
) -> None:
    cpu = client()
    before = compiler_runs.count
    affine.prepare(cpu, CUBE, k=10, tag=0)
    affine.prepare(cpu, CUBE, k=10, tag=0)
    cpu.compile_queued()
    affine.prepare(cpu, CUBE, k=10, tag=0)
    cpu.compile_queued()
    run_affine(cpu, k=10)
    assert compiler_runs.count - before == 1
    assert [b.kernels_asked for b in batches] == [1]


def test_a_failing_queued_kernel_leaves_the_others_and_raises_once_then_tries_again(
    batches: list[BatchRecord],
) -> None:
    cpu = client()
    before = compiler_runs.count
    fragile.prepare(cpu, CUBE, broken=False)
    fragile.prepare(cpu, CUBE, broken=True)
    affine.prepare(cpu, TOO_WIDE, k=11, tag=0)
    affine.prepare(cpu, CUBE, k=11, tag=0)
    cpu.compile_queued()
    assert compiler_runs.count - before == 2
    assert (batches[-1].compiled, batches[-1].failed) == (2, 2)
    run_fragile(cpu, broken=False)
    run_affine(cpu, k=11)

    with pytest.raises(CompilationError, match="mixes f32 and u32"):
        run_fragile(cpu, broken=True)
    with pytest.raises(ValidationError, match="2048 units along x"):
        run_affine(cpu, k=11, cube_dim=TOO_WIDE)
    assert len(batches) == 1, "each failure was raised as kept, without compiling again"

    with pytest.raises(CompilationError, match="mixes f32 and u32"):
        run_fragile(cpu, broken=True)
    assert len(batches) == 2 and batches[-1].failed == 1, "the next load tried again"
    assert compiler_runs.count - before == 2


def test_a_load_of_a_loaded_kernel_still_compiles_a_non_empty_queue_first(
    batches: list[BatchRecord],
) -> None:
    cpu = client()
    before = compiler_runs.count
    run_affine(cpu, k=12)
    loaded = affine.specialize(CUBE, k=12, tag=0)
    affine.prepare(cpu, CUBE, k=13, tag=0)
    assert cpu.loader.load(loaded, artifact(loaded), cpu.logger) is not None
    assert compiler_runs.count - before == 2
    assert batches[-1].kernels_asked == 1
    assert cpu.loader.get(artifact(affine.specialize(CUBE, k=13, tag=0))) is not None
    run_affine(cpu, k=13)
    assert compiler_runs.count - before == 2


def test_kernels_of_one_batch_with_the_same_c_text_compile_it_once(
    batches: list[BatchRecord],
) -> None:
    cpu = client()
    before = compiler_runs.count
    for tag in range(1, 5):
        affine.prepare(cpu, CUBE, k=14, tag=tag)
    cpu.compile_queued()
    assert compiler_runs.count - before == 1
    [batch] = batches
    assert outcomes(batch) == ["compiled", "rekeyed", "rekeyed", "rekeyed"]
    assert len({r.source_hash for r in batch.kernels}) == 1
    for tag in range(1, 5):
        run_affine(cpu, k=14, tag=tag)
    assert compiler_runs.count - before == 1


def test_kernels_of_one_batch_whose_shared_text_fails_all_fail_with_its_error_compiled_once(
    tmp_path: Path,
) -> None:
    failing = tmp_path / "failing-cc"
    failing.write_text("#!/bin/sh\necho 'kernel.c:1:1: error: refused by this compiler'\nexit 1\n")
    failing.chmod(0o755)
    config.override(cc=str(failing))
    cpu = client()
    before = compiler_runs.count
    for tag in (1, 2, 3):
        affine.prepare(cpu, CUBE, k=15, tag=tag)
    cpu.compile_queued()
    assert compiler_runs.count - before == 1
    errors = []
    for tag in (1, 2, 3):
        with pytest.raises(CompilationError) as raised:
            run_affine(cpu, k=15, tag=tag)
        errors.append(raised.value)
    assert len({(type(e), str(e)) for e in errors}) == 1
    assert "refused by this compiler" in str(errors[0])
    assert compiler_runs.count - before == 1


def test_a_text_the_store_holds_serves_a_later_batch_without_compiling(
    batches: list[BatchRecord],
) -> None:
    run_affine(client(), k=16, tag=0)
    before = compiler_runs.count
    later = client()
    affine.prepare(later, CUBE, k=16, tag=1)
    affine.prepare(later, CUBE, k=16, tag=2)
    later.compile_queued()
    assert compiler_runs.count == before
    assert outcomes(batches[-1]) == ["rekeyed", "rekeyed"]
    assert all(r.finalize is None for r in batches[-1].kernels)
    run_affine(later, k=16, tag=1)
    run_affine(later, k=16, tag=2)
    assert compiler_runs.count == before


def test_without_persistence_every_kernel_compiles_its_own_where_it_was_lowered(
    batches: list[BatchRecord],
) -> None:
    config.override(compilation_cache=False)
    cpu = client()
    assert not cpu.target.persists()
    before = compiler_runs.count
    affine.prepare(cpu, CUBE, k=17, tag=1)
    affine.prepare(cpu, CUBE, k=17, tag=2)
    cpu.compile_queued()
    assert compiler_runs.count - before == 2, "no store: the same text compiles per kernel"
    assert outcomes(batches[-1]) == ["compiled", "compiled"]
    for record in batches[-1].kernels:
        assert record.lower is not None and record.finalize is not None
        assert record.finalize.thread == record.lower.thread
    run_affine(cpu, k=17, tag=1)
    run_affine(cpu, k=17, tag=2)


class SourcelessCompiler(CpuCompiler):
    """A CPU compiler that tells the loader no source: nothing can be shared by text."""

    @staticmethod
    def source(lowered: Any) -> None:
        return None


def test_a_kernel_without_a_source_finalizes_where_it_was_lowered(
    batches: list[BatchRecord],
) -> None:
    cpu = client(target=CpuTarget(SourcelessCompiler()))
    before = compiler_runs.count
    affine.prepare(cpu, CUBE, k=18, tag=1)
    affine.prepare(cpu, CUBE, k=18, tag=2)
    cpu.compile_queued()
    assert compiler_runs.count - before == 2
    for record in batches[-1].kernels:
        assert record.lower is not None and record.finalize is not None
        assert record.finalize.thread == record.lower.thread
    run_affine(cpu, k=18, tag=1)
    run_affine(cpu, k=18, tag=2)


def raised_by(call: Any) -> BaseException:
    try:
        call()
    except BaseException as e:
        return e
    raise AssertionError("it did not raise")


def test_errors_raised_on_workers_reach_the_launch_with_their_type_and_message(
    tmp_path: Path,
) -> None:
    cpu = client()
    compiler = cpu.target.compiler()
    before = compiler_runs.count

    wide = affine.specialize(TOO_WIDE, k=19, tag=0)
    recording = CompilationRecording.for_artifact(artifact(wide), False)
    direct = raised_by(lambda: compiler.lower(wide, artifact(wide), recording, ServerLogger()))
    through = raised_by(lambda: run_affine(cpu, k=19, cube_dim=TOO_WIDE))
    assert type(through) is type(direct) is ValidationError
    assert str(through) == str(direct)
    assert compiler_runs.count == before, "validation fails before any compiler runs"

    broken = fragile.specialize(CUBE, broken=True)
    through = raised_by(lambda: run_fragile(cpu, broken=True))
    assert type(through) is type(raised_by(broken.define)) is CompilationError
    assert str(through) == str(raised_by(broken.define))

    failing = tmp_path / "failing-cc"
    failing.write_text("#!/bin/sh\necho 'kernel.c:9:9: error: no such luck'\nexit 1\n")
    failing.chmod(0o755)
    config.override(cc=str(failing))
    cpu = client()
    compiler = cpu.target.compiler()
    spec = affine.specialize(CUBE, k=19, tag=0)
    recording = CompilationRecording.for_artifact(artifact(spec), False)
    lowered = compiler.lower(spec, artifact(spec), recording, ServerLogger())
    direct = raised_by(lambda: compiler.finalize(artifact(spec), lowered))
    through = raised_by(lambda: run_affine(cpu, k=19))
    assert type(through) is type(direct) is CompilationError
    assert str(through) == str(direct) and "no such luck" in str(through)
    assert isinstance(through, CompilationError) and through.source == lowered.source


class WatchedTarget(CpuTarget):
    """A CPU target that notes each call the loader makes, and on which thread."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str, object]] = []

    def _note(self, method: str, about: object) -> None:
        self.calls.append((method, threading.current_thread().name, about))

    def stored_many(self, ids: Sequence[ArtifactId[Any]]) -> Any:
        self._note("stored_many", tuple(ids))
        return super().stored_many(ids)

    def stored_for_source(self, source: str) -> Any:
        self._note("stored_for_source", source)
        return super().stored_for_source(source)

    def load(self, id: ArtifactId[Any], artifact: Any) -> Any:
        self._note("load", id)
        return super().load(id, artifact)

    def store(self, id: ArtifactId[Any], artifact: Any, source: str | None) -> bool:
        self._note("store", id)
        return super().store(id, artifact, source)


def test_the_target_works_on_the_calling_thread_in_order_and_the_compiler_on_workers(
    batches: list[BatchRecord],
) -> None:
    target = WatchedTarget()
    cpu = client(target=target)
    specs = [affine.specialize(CUBE, k=20, tag=0), affine.specialize(CUBE, k=20, tag=1)]
    specs.append(affine.specialize(CUBE, k=21, tag=0))
    failures: list[BaseException] = []

    def warm() -> None:
        try:
            for spec in specs:
                cpu.prepare(spec)
            cpu.compile_queued()
        except BaseException as e:
            failures.append(e)

    caller = threading.Thread(target=warm, name="the-caller")
    caller.start()
    caller.join()
    assert failures == []
    assert {thread for _, thread, _ in target.calls} == {"the-caller"}
    methods = [method for method, _, _ in target.calls]
    assert methods[0] == "stored_many", "the store is asked for every kernel first, at once"
    assert target.calls[0][2] == tuple(artifact(spec) for spec in specs)
    assert methods.count("stored_many") == 1
    for spec in specs:
        mine = [method for method, _, about in target.calls if about == artifact(spec)]
        assert mine == ["load", "store"]
    for record in batches[-1].kernels:
        assert record.lower is not None and record.lower.thread.startswith("cubejit-compile-")
        assert record.load is not None and record.load.thread == "the-caller"
        if record.finalize is not None:
            assert record.finalize.thread.startswith("cubejit-compile-")
    run_affine(cpu, k=20, tag=1)
    run_affine(cpu, k=21)


def test_records_tell_each_trip_its_outcome_and_work_and_skip_memory_hits_and_failures(
    batches: list[BatchRecord],
) -> None:
    config.override(record_level="full")
    cpu = client(parallelism=2)
    before = compiler_runs.count
    affine.prepare(cpu, CUBE, k=22, tag=0)
    affine.prepare(cpu, CUBE, k=22, tag=1)
    fragile.prepare(cpu, CUBE, broken=True)
    cpu.compile_queued()
    [batch] = batches
    assert recent_records()[-1] is batch
    assert (batch.kernels_asked, batch.compiled, batch.rekeyed, batch.failed) == (3, 1, 1, 1)
    assert batch.threads == 2 and batch.wall_s > 0
    assert outcomes(batch) == ["compiled", "rekeyed"]
    compiled = next(r for r in batch.kernels if r.outcome == "compiled")
    rekeyed = next(r for r in batch.kernels if r.outcome == "rekeyed")
    assert compiled.finalize is not None and compiled.work_s >= compiled.finalize.seconds > 0
    assert rekeyed.finalize is None and rekeyed.work_s > 0
    for record in (compiled, rekeyed):
        assert record.ir and "affine" in record.ir
        assert record.source_text and "cubejit_launch" in record.source_text
    assert compiled.source_hash == rekeyed.source_hash

    run_affine(cpu, k=22, tag=0)
    with pytest.raises(CompilationError):
        run_fragile(cpu, broken=True)
    assert len(batches) == 1, "an in-memory hit and a kept failure are not recorded"

    run_affine(client(), k=22, tag=0)
    [loaded] = batches[-1].kernels
    assert loaded.outcome == "loaded" and loaded.lower is None and loaded.load is not None
    assert (batches[-1].compiled, batches[-1].from_store) == (0, 1)
    assert compiler_runs.count - before == 1
