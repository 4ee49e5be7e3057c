"""One copy per artifact: kernels that lower to one text share its bytes in the store, values
are compressed, and environments written before records existed are read as they were.

Real kernels on the CPU backend, a real SQLite file; compiles counted by
:data:`~cubejit.backends.cpu.compiler_runs`.
"""

from __future__ import annotations

import logging
import sqlite3
import zlib
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from store_kernels import cpu_entries

import cubejit as cj
from cubejit import environment
from cubejit.backends.cpu import CpuClient, CpuTarget, compiler_runs
from cubejit.compile import add_record_sink, remove_record_sink
from cubejit.environment.artifacts import ID_PREFIX, SOURCE_KEY, SOURCE_PREFIX
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.storage_sqlite import SELECT_VALUES, SqliteStorage
from cubejit.environment.value import decode, encode

N = 333
CUBE = 32
KERNELS = 8


@cj.kernel
def scaled(x: cj.Array[cj.f32], out: cj.Array[cj.f32], tag: cj.Comptime[int]):
    i = cj.ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * 3.0 - 1.0


def launch_all(client: CpuClient, tags: range, kernel: cj.Kernel = scaled) -> None:
    rng = np.random.default_rng(7)
    for tag in tags:
        kernel.prepare(client, CUBE, tag=tag)
    client.compile_queued()
    for tag in tags:
        x = rng.random(N, dtype=np.float32)
        out = client.empty(N, cj.f32)
        kernel.launch(client, cj.cdiv(N, CUBE), CUBE, client.to_device(x), out, tag=tag)
        np.testing.assert_allclose(out.array, x * np.float32(3.0) - np.float32(1.0), rtol=1e-6)


def test_kernels_with_one_source_keep_its_bytes_once_and_compressed(root: Path) -> None:
    launch_all(CpuClient(target=CpuTarget()), range(KERNELS))
    entries = list(cpu_entries(environment.path()).items())
    sources = [(k, v) for k, v in entries if k.startswith(SOURCE_PREFIX)]
    records = [(k, v) for k, v in entries if k.startswith(ID_PREFIX)]
    assert len(sources) == 1 and len(records) == KERNELS
    ((_, copy),) = sources
    assert all(decode(v).payload == b"" for _, v in records)
    assert all(decode(v).header[SOURCE_KEY] == sources[0][0].decode() for _, v in records)
    library = decode(copy).payload
    assert library.startswith(b"\x7fELF")
    assert len(copy) < len(library), "the shared object is stored compressed"
    total = sum(len(v) for _, v in entries)
    record_bytes = sum(len(v) for _, v in records)
    assert total - record_bytes <= 1.1 * len(copy), "the bytes are stored once"
    assert record_bytes / KERNELS < 2048, "a kernel's own entry is a small record"


def test_a_second_process_loads_every_kernel_of_one_source_from_its_one_copy(
    root: Path, outcomes: list[str]
) -> None:
    launch_all(CpuClient(target=CpuTarget()), range(KERNELS))
    ENVIRONMENTS.reset()
    before = compiler_runs.count
    fresh = cj.kernel(scaled.fn)
    launch_all(CpuClient(target=CpuTarget()), range(KERNELS), fresh)
    assert compiler_runs.count == before
    assert outcomes[-KERNELS:] == ["loaded"] * KERNELS
    specs = [fresh.specialize(CUBE, tag=tag) for tag in range(KERNELS)]
    assert not any(spec._ir for spec in specs), "a warm first launch translates nothing"


def test_an_environment_of_the_old_layout_with_bytes_under_each_id_is_read(
    root: Path, outcomes: list[str]
) -> None:
    launch_all(CpuClient(target=CpuTarget()), range(2))
    database = environment.path()
    ENVIRONMENTS.reset()
    with closing(sqlite3.connect(database)) as db, db:
        stored = {bytes(k): bytes(v) for k, v in db.execute("SELECT key, value FROM entries")}
        (source_key,) = [k for k in stored if k.startswith(SOURCE_PREFIX)]
        full = decode(stored[source_key])
        for key, value in stored.items():
            if key.startswith(ID_PREFIX):
                header = {**decode(value).header, **full.header}
                del header[SOURCE_KEY]
                db.execute(
                    "UPDATE entries SET value = ? WHERE key = ?",
                    (old_format(full.payload, header), key),
                )
        db.execute("DELETE FROM entries WHERE key = ?", (source_key,))
    before = compiler_runs.count
    launch_all(CpuClient(target=CpuTarget()), range(2))
    assert compiler_runs.count == before
    assert outcomes[-2:] == ["loaded", "loaded"]


def old_format(payload: bytes, header: dict[str, object]) -> bytes:
    """A value as format 1 wrote it: the payload as it is, whatever its size."""
    import hashlib
    import json
    import struct

    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    body = struct.pack("<4sHIQ", b"CJV1", 1, len(text), len(payload)) + text + payload
    return body + hashlib.sha256(body).digest()


def test_a_value_that_does_not_shrink_is_kept_uncompressed_and_one_that_does_is_not() -> None:
    noise = np.random.default_rng(3).bytes(4096)
    assert decode(encode(noise, {})).payload == noise
    assert len(encode(noise, {})) > len(noise)
    text = b"cubejit " * 512
    value = encode(text, {"a": 1})
    assert len(value) < len(zlib.compress(text)) + 200
    assert decode(value).payload == text and decode(value).header == {"a": 1}


def test_a_stored_artifact_that_decodes_but_cannot_be_loaded_is_dropped_and_compiled_once(
    root: Path, outcomes: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    launch_all(CpuClient(target=CpuTarget()), range(1))
    database = environment.path()
    ENVIRONMENTS.reset()
    with closing(sqlite3.connect(database)) as db, db:
        ((key, value),) = db.execute(
            "SELECT key, value FROM entries WHERE key >= ? AND key < ?", (SOURCE_PREFIX, b"sourcf")
        )
        intact = decode(bytes(value))
        db.execute(
            "UPDATE entries SET value = ? WHERE key = ?",
            (encode(b"not a shared object", {**intact.header}), key),
        )
    before = compiler_runs.count
    launch_all(CpuClient(target=CpuTarget()), range(1))
    assert compiler_runs.count == before + 1
    ENVIRONMENTS.reset()
    launch_all(CpuClient(target=CpuTarget()), range(1))
    assert compiler_runs.count == before + 1, "the fresh compile replaced the bad entry"
    assert outcomes == ["compiled", "compiled", "loaded"]
    dropped = [r for r in caplog.records if "cannot be loaded" in r.getMessage()]
    assert len(dropped) == 1, "one warning, in the run that found it"


def test_a_warm_batch_reads_its_records_then_their_one_copy_in_two_queries(
    root: Path, outcomes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    launch_all(CpuClient(target=CpuTarget()), range(KERNELS))
    ENVIRONMENTS.reset()
    reads: list[str] = []
    for name in ("get", "get_many"):
        real = getattr(SqliteStorage, name)

        def counted(*args: object, _real: Any = real, _name: str = name, **kw: object) -> Any:
            reads.append(_name)
            return _real(*args, **kw)

        monkeypatch.setattr(SqliteStorage, name, counted)
    before = compiler_runs.count
    launch_all(CpuClient(target=CpuTarget()), range(KERNELS), cj.kernel(scaled.fn))
    assert compiler_runs.count == before
    assert outcomes[-KERNELS:] == ["loaded"] * KERNELS
    assert reads == ["get_many", "get_many"], "the records, then each entry they name, once"


def test_a_warm_first_launch_reads_its_record_and_the_entry_it_names_only(
    root: Path, outcomes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(11)
    x = rng.random(N, dtype=np.float32)

    def first_launch() -> np.ndarray:
        client = CpuClient(target=CpuTarget())
        out = client.empty(N, cj.f32)
        fresh = cj.kernel(scaled.fn)
        fresh.launch(client, cj.cdiv(N, CUBE), CUBE, client.to_device(x), out, tag=0)
        return out.array

    first_launch()
    ENVIRONMENTS.reset()
    queries: list[str] = []
    real_run = SqliteStorage._run

    def counted_run(self: SqliteStorage, work: Any) -> Any:
        queries.append(getattr(work, "args", ("write",))[0])
        return real_run(self, work)

    monkeypatch.setattr(SqliteStorage, "_run", counted_run)
    result = first_launch()
    np.testing.assert_allclose(result, x * np.float32(3.0) - np.float32(1.0), rtol=1e-6)
    assert outcomes[-1] == "loaded"
    assert queries == [SELECT_VALUES.format("?")] * 2


def test_ready_reads_runs_the_very_query_a_first_launch_runs_and_finds_nothing(
    root: Path, outcomes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cubejit.environment.artifacts import ready_reads

    launch_all(CpuClient(target=CpuTarget()), range(1))
    ENVIRONMENTS.reset()
    statements: list[str] = []
    answers: list[int] = []
    real_run = SqliteStorage._run

    def counted_run(self: SqliteStorage, work: Any) -> Any:
        statements.append(getattr(work, "args", ("write",))[0])
        result = real_run(self, work)
        answers.append(len(result) if isinstance(result, list) else -1)
        return result

    monkeypatch.setattr(SqliteStorage, "_run", counted_run)
    ready_reads()
    assert answers == [0], "the look-up ran once and found no entry"
    launch_all(CpuClient(target=CpuTarget()), range(1), cj.kernel(scaled.fn))
    assert outcomes[-1] == "loaded"
    assert statements[1:] == statements[:1] * 2, (
        "the first launch ran the statement prepared, for its record and the entry it names"
    )
    assert answers[1] >= 1


def test_a_warm_first_launch_writes_no_records_until_a_batch_compiles(root: Path) -> None:
    from cubejit.environment import records

    launch_all(CpuClient(target=CpuTarget()), range(1))
    database = environment.path()
    written = len(records.read("batches", database))
    assert written >= 1, "the compiling batch wrote its records at its end"
    ENVIRONMENTS.reset()
    process_keeper = records.install()
    fresh_keeper = records.RecordKeeper()
    remove_record_sink(process_keeper)
    add_record_sink(fresh_keeper)
    try:
        launch_all(CpuClient(target=CpuTarget()), range(1), cj.kernel(scaled.fn))
        assert len(records.read("batches", database)) == written
        launch_all(CpuClient(target=CpuTarget()), range(1, 2), cj.kernel(scaled.fn))
    finally:
        remove_record_sink(fresh_keeper)
        add_record_sink(process_keeper)
    assert len(records.read("batches", database)) == written + 2, (
        "the batch that compiled wrote the held one with its own, in one transaction"
    )
