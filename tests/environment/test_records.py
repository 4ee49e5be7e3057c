"""Records: a session is written once it changed its environment, and kept as configured."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cubejit import config
from cubejit.compile.recording import BatchRecord, CompilationRecording, Phase
from cubejit.environment import records
from cubejit.environment.records import PENDING_LIMIT, RecordKeeper
from cubejit.environment.storage_sqlite import SqliteStorage


@pytest.fixture
def database(tmp_path: Path) -> Path:
    """An environment database as the store makes it."""
    path = tmp_path / "default.db"
    SqliteStorage.open(path).close()
    return path


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Changes settings for one test; those before it come back after."""
    monkeypatch.setattr(config, "_current", config.settings())
    yield lambda **changes: config.override(**changes) and None


def trip(name: str, outcome: str, *, text: str = "") -> CompilationRecording:
    recording = CompilationRecording(
        kernel=f"{name}[256x1x1]#abc",
        name=name,
        artifact=f"hash-of-{name}",
        variant="16",
        keep_text=True,
        outcome=outcome,
        lower=Phase("cubejit-compile-0", 0.0, 0.25) if outcome != "loaded" else None,
        finalize=Phase("cubejit-compile-0", 0.25, 1.0) if outcome == "compiled" else None,
        load=Phase("MainThread", 1.0, 1.5),
    )
    recording.defined(f"ir of {name} {text}")
    recording.source(f"source of {name} {text}")
    return recording


def batch(*kernels: CompilationRecording) -> BatchRecord:
    outcomes = [k.outcome for k in kernels]
    return BatchRecord(
        started_at=1000.0,
        wall_s=2.0,
        kernels_asked=len(kernels),
        compiled=outcomes.count("compiled"),
        from_store=outcomes.count("loaded"),
        rekeyed=outcomes.count("rekeyed"),
        failed=0,
        threads=2,
        kernels=kernels,
    )


def test_a_session_that_only_loads_writes_nothing(database: Path) -> None:
    keeper = RecordKeeper(lambda: database)
    for _ in range(3):
        keeper(batch(trip("saxpy", "loaded"), trip("chain", "loaded")))
    assert records.read("sessions", database) == []
    assert records.read("compilations", database) == []


def test_a_batch_that_only_loads_makes_no_rows_until_its_session_is_written(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int] = []
    real = records._rows

    def counting(*args: object) -> list[tuple[str, tuple[object, ...]]]:
        rows = real(*args)  # type: ignore[arg-type]
        made.append(len(rows))
        return rows

    monkeypatch.setattr(records, "_rows", counting)
    keeper = RecordKeeper(lambda: database)
    for _ in range(3):
        keeper(batch(trip("saxpy", "loaded"), trip("chain", "loaded")))
    assert made == []
    keeper(batch(trip("stencil", "compiled")))
    assert made == [3, 3, 3, 2]
    assert [c.stamp for c in records.read("compilations", database)] == [1, 2, 4, 5, 7, 8, 10]


def test_the_first_compile_writes_the_session_with_what_it_held_back(database: Path) -> None:
    keeper = RecordKeeper(lambda: database)
    keeper(batch(trip("saxpy", "loaded")))
    keeper(batch(trip("chain", "compiled"), trip("stencil", "rekeyed")))
    keeper(batch(trip("chain", "loaded")))
    (session,) = records.read("sessions", database)
    assert session.id == keeper.session(database).id
    compilations = records.read("compilations", database)
    assert [(c.name, c.outcome) for c in compilations] == [
        ("saxpy", "loaded"),
        ("chain", "compiled"),
        ("stencil", "rekeyed"),
        ("chain", "loaded"),
    ]
    batches = records.read("batches", database)
    assert [(b.kernels_asked, b.compiled, b.rekeyed) for b in batches] == [
        (1, 0, 0),
        (2, 1, 1),
        (1, 0, 0),
    ]
    assert [c.batch for c in compilations] == [
        batches[0].stamp,
        *[batches[1].stamp] * 2,
        batches[2].stamp,
    ]
    stamps = sorted([c.stamp for c in compilations] + [b.stamp for b in batches])
    assert stamps == list(range(1, 8))
    assert all(c.batch > c.stamp for c in compilations)


def test_a_rekey_alone_changes_the_environment(database: Path) -> None:
    RecordKeeper(lambda: database)(batch(trip("saxpy", "rekeyed")))
    assert len(records.read("sessions", database)) == 1


def test_compilation_records_keep_work_and_the_phases_of_each_trip(database: Path) -> None:
    RecordKeeper(lambda: database)(batch(trip("saxpy", "compiled")))
    (record,) = records.read("compilations", database)
    assert record.work_s == pytest.approx(1.5)
    assert record.artifact == "hash-of-saxpy"
    assert record.phases == {
        "lower": {"thread": "cubejit-compile-0", "start": 0.0, "end": 0.25},
        "finalize": {"thread": "cubejit-compile-0", "start": 0.25, "end": 1.0},
        "load": {"thread": "MainThread", "start": 1.0, "end": 1.5},
    }
    assert record.source_hash is not None


@pytest.mark.parametrize(("level", "kept"), [("basic", False), ("full", True)])
def test_ir_and_source_are_kept_only_at_level_full(
    database: Path, settings: Callable[..., None], level: str, kept: bool
) -> None:
    settings(record_level=level)
    RecordKeeper(lambda: database)(batch(trip("saxpy", "compiled")))
    (record,) = records.read("compilations", database)
    assert (record.ir, record.source) == (
        ("ir of saxpy ", "source of saxpy ") if kept else (None, None)
    )


def test_level_off_keeps_nothing(database: Path, settings: Callable[..., None]) -> None:
    settings(record_level="off")
    RecordKeeper(lambda: database)(batch(trip("saxpy", "compiled")))
    assert records.read("sessions", database) == []


def test_held_back_records_are_bounded_and_the_oldest_go_first(
    database: Path, settings: Callable[..., None]
) -> None:
    settings(record_level="full")
    keeper = RecordKeeper(lambda: database)
    text = "x" * (PENDING_LIMIT // 8)  # IR and source: a quarter of the limit a record
    for i in range(8):
        keeper(batch(trip(f"warm{i}", "loaded", text=text)))
    keeper(batch(trip("cold", "compiled")))
    names = [c.name for c in records.read("compilations", database)]
    assert names == ["warm5", "warm6", "warm7", "cold"]


def test_sessions_beyond_the_number_kept_are_pruned_with_their_records(
    database: Path, settings: Callable[..., None]
) -> None:
    settings(keep_sessions=2)
    keepers = [RecordKeeper(lambda: database) for _ in range(3)]
    for i, keeper in enumerate(keepers):
        keeper(batch(trip(f"k{i}", "compiled")))
    sessions = records.read("sessions", database)
    assert [s.id for s in sessions] == [k.session(database).id for k in keepers[1:]]
    assert [c.name for c in records.read("compilations", database)] == ["k1", "k2"]
    assert len(records.read("batches", database)) == 2


def test_every_session_is_kept_by_default(database: Path) -> None:
    for i in range(4):
        RecordKeeper(lambda: database)(batch(trip(f"k{i}", "compiled")))
    assert len(records.read("sessions", database)) == 4


def test_a_label_names_the_session_before_and_after_it_is_written(database: Path) -> None:
    keeper = RecordKeeper(lambda: database)
    keeper.label("warm")
    keeper(batch(trip("saxpy", "compiled")))
    assert records.read("sessions", database)[0].label == "warm"
    keeper.label("serve")
    (session,) = records.read("sessions", database)
    assert session.label == "serve"
    assert session.pid > 0 and session.os and session.arch and session.version


def test_each_environment_has_a_session_of_its_own(tmp_path: Path) -> None:
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    for path in (first, second):
        SqliteStorage.open(path).close()
    active = [first]
    keeper = RecordKeeper(lambda: active[0])
    keeper(batch(trip("saxpy", "compiled")))
    active[0] = second
    keeper(batch(trip("chain", "compiled")))
    (a,), (b,) = records.read("sessions", first), records.read("sessions", second)
    assert a.id != b.id
    assert [c.name for c in records.read("compilations", second)] == ["chain"]


def test_records_never_go_into_a_bundle_or_a_missing_database(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bundle = tmp_path / "shipped.cjb"
    SqliteStorage.open(bundle, kind="bundle").close()
    missing = tmp_path / "nothing-here.db"
    caplog.set_level(logging.WARNING, logger="cubejit.records")
    for path in (bundle, missing):
        keeper = RecordKeeper(lambda p=path: p)
        keeper(batch(trip("saxpy", "compiled")))
        keeper(batch(trip("chain", "compiled")))
    assert not missing.exists()
    assert records.read("sessions", bundle) == []
    assert len([r for r in caplog.records if "cannot write compilation records" in r.message]) == 2


def test_reading_an_environment_without_records_finds_none(database: Path) -> None:
    assert records.read("batches", database) == []
    assert records.read("sessions", database.with_name("absent.db")) == []
    with pytest.raises(ValueError, match="sessions, batches, compilations"):
        records.read("kernels", database)
