"""Behaviour 14 of the loader: each trip and each batch is recorded; the compilation log."""

from __future__ import annotations

import logging
import threading

import pytest
from loader_fakes import FakeKernel, FakeTarget

from cubejit import config
from cubejit.compile import (
    BatchRecord,
    KernelLoader,
    ServerLogger,
    add_record_sink,
    recent_records,
)
from cubejit.compile.recording import remove_record_sink


def load(loader: KernelLoader, kernel: FakeKernel):
    return loader.load(kernel, kernel.artifact_id(), ServerLogger())


@pytest.fixture
def sink():
    records: list[BatchRecord] = []
    add_record_sink(records.append)
    yield records
    remove_record_sink(records.append)


def test_each_trip_is_recorded_with_its_outcome_work_and_phases(
    target: FakeTarget, sink: list[BatchRecord], record_level
):
    record_level("basic")
    KernelLoader(target, parallelism=1).load(
        FakeKernel("old", source="s"), FakeKernel("old").artifact_id(), ServerLogger()
    )
    loader = KernelLoader(target, parallelism=2)
    for kernel in [FakeKernel("old"), FakeKernel("twin", source="s"), FakeKernel("new")]:
        loader.enqueue(kernel, None)

    loader.compile_queued()

    batch = sink[-1]
    assert batch is recent_records()[-1]
    assert (batch.kernels_asked, batch.compiled, batch.from_store, batch.rekeyed) == (3, 1, 1, 1)
    assert (batch.failed, batch.threads) == (0, 2)
    assert batch.wall_s > 0 and batch.started_at > 0
    records = {r.name: r for r in batch.kernels}
    assert {n: r.outcome for n, r in records.items()} == {
        "old": "loaded",
        "twin": "rekeyed",
        "new": "compiled",
    }
    new = records["new"]
    assert new.lower.thread.startswith("cubejit-compile-")
    assert new.finalize.thread == new.lower.thread
    assert new.load.thread == threading.current_thread().name
    assert 0 <= new.lower.start <= new.lower.end <= new.finalize.start <= new.finalize.end
    assert new.finalize.end <= new.load.start <= new.load.end <= batch.wall_s
    assert new.work_s == pytest.approx(new.lower.seconds + new.finalize.seconds + new.load.seconds)
    assert records["old"].lower is None and records["old"].load is not None
    assert records["twin"].finalize is None and records["twin"].lower is not None
    assert records["twin"].source_hash is not None
    assert all(r.ir is None and r.source_text is None for r in batch.kernels)
    assert batch.as_dict()["kernels"][2]["outcome"] == "compiled"


def test_at_full_record_level_a_record_keeps_the_ir_and_the_source(
    target: FakeTarget, sink: list[BatchRecord], record_level
):
    record_level("full")
    load(KernelLoader(target, parallelism=1), FakeKernel("k", source="int main;"))

    (record,) = sink[-1].kernels
    assert (record.ir, record.source_text) == ("ir of k", "int main;")


def test_in_memory_hits_and_failures_are_not_recorded(
    target: FakeTarget, sink: list[BatchRecord], record_level
):
    record_level("basic")
    loader = KernelLoader(target, parallelism=2)
    good, bad = FakeKernel("good"), FakeKernel("bad", fail_lower=ValueError("no"))
    loader.enqueue(bad, None)
    load(loader, good)
    load(loader, good)

    assert len(sink) == 1
    assert [r.name for r in sink[0].kernels] == ["good"]
    assert (sink[0].kernels_asked, sink[0].failed) == (2, 1)


def test_at_record_level_off_nothing_is_recorded(
    target: FakeTarget, sink: list[BatchRecord], record_level
):
    record_level("off")
    load(KernelLoader(target, parallelism=1), FakeKernel("k"))

    assert sink == []


def test_a_failing_record_sink_never_fails_a_compilation(target: FakeTarget, record_level):
    record_level("basic")

    def broken(record: BatchRecord) -> None:
        raise OSError("disk full")

    add_record_sink(broken)
    try:
        assert load(KernelLoader(target, parallelism=1), FakeKernel("k")) is not None
    finally:
        remove_record_sink(broken)


def test_the_compilation_logger_says_one_info_line_per_batch(
    target: FakeTarget, caplog: pytest.LogCaptureFixture
):
    loader = KernelLoader(target, parallelism=2)
    for i in range(3):
        loader.enqueue(FakeKernel(f"k{i}"), None)

    with caplog.at_level(logging.DEBUG, logger="cubejit.compilation"):
        loader.compile_queued()

    infos = [r for r in caplog.records if r.levelno == logging.INFO]
    assert len(infos) == 1
    assert infos[0].name == "cubejit.compilation"
    expected = (
        "compilation batch: 3 kernels asked, 3 compiled, 0 from the store, 0 rekeyed, 0 failed, "
        "2 threads, "
    )
    assert infos[0].getMessage().startswith(expected)
    debugs = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert len(debugs) == 3 and all(m.startswith("compiled k") for m in debugs)


def test_each_compiled_source_is_written_to_the_dump_folder(
    target: FakeTarget, tmp_path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(config, "_current", config.settings())
    config.override(dump_dir=tmp_path / "dump")
    kernel = FakeKernel("my.kernel", source="void kernel(void) {}")

    load(KernelLoader(target, parallelism=1), kernel)

    (dumped,) = (tmp_path / "dump").iterdir()
    assert dumped.name == f"my.kernel.{kernel.artifact_id().stable_hash()[:16]}.txt"
    assert dumped.read_text() == "void kernel(void) {}"


def test_a_stored_artifact_the_device_refuses_is_compiled_again(target: FakeTarget):
    kernel = FakeKernel("k")
    load(KernelLoader(target, parallelism=1), kernel)
    refusals = [RuntimeError("a corrupt artifact")]

    def refuse_once(_id: object) -> None:
        if refusals:
            raise refusals.pop()

    target.on_load = refuse_once

    assert load(KernelLoader(target, parallelism=1), kernel) is not None
    assert target.fake_compiler.lowered_names() == ["k", "k"]
