"""Faults of the files under the store: each survived with one WARNING and right results."""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest
from store_helpers import mounted_tmpfs, read_only_directory

from cubejit import config, environment
from cubejit.compile.id import ArtifactId, KernelId
from cubejit.environment import ArtifactStore, Store, filesystem, storage_sqlite
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.sqlite_file import SCHEMA_VERSION, Damaged
from cubejit.environment.storage import InsertOutcome
from cubejit.environment.storage_sqlite import SqliteStorage


def kernel(i: int) -> ArtifactId[None]:
    return ArtifactId(KernelId(f"kernel_{i}", {"types": ["f32"]}, 64), None)


def payload(i: int, size: int = 1000) -> bytes:
    return random.Random(i).randbytes(size)


def fill(store: ArtifactStore, count: int, size: int = 1000) -> None:
    for i in range(count):
        store.store(kernel(i), payload(i, size), {"i": i}, f"text {i}")


def all_served(store: ArtifactStore, count: int, size: int = 1000) -> bool:
    return all(store.stored(kernel(i)) == (payload(i, size), {"i": i}) for i in range(count))


def aside(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("*.damaged-*") if not p.name.endswith(("-wal", "-shm")))


def test_random_bytes_over_stored_values_are_never_served(
    root: Path, store_warnings: list[logging.LogRecord]
) -> None:
    fill(ArtifactStore("cpu", "fp"), 6)
    ENVIRONMENTS.reset()
    database = environment.path()
    data = bytearray(database.read_bytes())
    for i in (1, 4):
        at = data.find(payload(i)[:64])
        assert at > 0
        data[at + 100 : at + 140] = random.Random(-i).randbytes(40)
    database.write_bytes(bytes(data))
    store = ArtifactStore("cpu", "fp")
    served = [store.stored(kernel(i)) for i in range(6)]
    assert [s is not None for s in served] == [True, False, True, True, False, True]
    assert len(store_warnings) == 2
    fill(store, 6)
    assert all_served(store, 6)


@pytest.mark.parametrize("damage", ["truncated", "not sqlite", "an older schema"])
def test_a_damaged_database_is_set_aside_and_rebuilt(
    root: Path, store_warnings: list[logging.LogRecord], damage: str
) -> None:
    fill(ArtifactStore("cpu", "fp"), 30)
    ENVIRONMENTS.reset()
    database = environment.path()
    if damage == "truncated":
        with database.open("r+b") as f:
            f.truncate(database.stat().st_size // 2)
    elif damage == "not sqlite":
        database.write_bytes(b"this is not a database; " * 500)
    else:
        with sqlite3.connect(database) as db:
            db.execute("UPDATE meta SET value = '1' WHERE name = 'schema_version'")
    store = ArtifactStore("cpu", "fp")
    store.stored(kernel(0))
    fill(store, 30)
    assert all_served(store, 30)
    assert store.persists()
    assert len(store_warnings) == 1
    assert "set aside" in store_warnings[0].getMessage()
    assert len(aside(root)) == 1
    ENVIRONMENTS.reset()
    assert all_served(ArtifactStore("cpu", "fp"), 30)


def test_a_read_only_root_falls_back_to_memory_with_one_warning(
    root: Path, tmp_path: Path, store_warnings: list[logging.LogRecord]
) -> None:
    with read_only_directory(tmp_path / "read-only") as where:
        config.override(cache_dir=where / "cubejit")
        store = ArtifactStore("cpu", "fp")
        fill(store, 10)
        assert all_served(store, 10)
        assert not store.persists()
        assert len(store_warnings) == 1
        assert "kept in memory" in store_warnings[0].getMessage()
        ENVIRONMENTS.reset()


def test_a_full_disk_falls_back_to_memory_with_one_warning(
    root: Path, tmp_path: Path, store_warnings: list[logging.LogRecord]
) -> None:
    with mounted_tmpfs(tmp_path / "tiny", "size=256k") as where:
        config.override(cache_dir=where)
        store = ArtifactStore("cpu", "fp")
        fill(store, 30, size=16_000)
        assert all_served(store, 30, size=16_000)
        assert len(store_warnings) == 1
        assert "full" in store_warnings[0].getMessage()
        assert os.statvfs(where).f_bavail < 8
        ENVIRONMENTS.reset()


def test_a_filled_environment_on_a_read_only_mount_is_still_served(
    root: Path, tmp_path: Path, store_warnings: list[logging.LogRecord]
) -> None:
    with mounted_tmpfs(tmp_path / "image", "size=4m") as where:
        config.override(cache_dir=where)
        fill(ArtifactStore("cpu", "fp"), 10)
        ENVIRONMENTS.reset()
        remount = subprocess.run(["mount", "-o", "remount,ro", str(where)], check=False)
        assert remount.returncode == 0
        store = ArtifactStore("cpu", "fp")
        assert all_served(store, 10)
        fill(store, 12)
        assert all_served(store, 12)
        assert len(store_warnings) == 1
        ENVIRONMENTS.reset()


def test_a_write_the_disk_refuses_is_a_failed_outcome_not_an_exception(tmp_path: Path) -> None:
    with mounted_tmpfs(tmp_path / "disk", "size=128k") as where:
        storage = SqliteStorage.open(where / "e.db")
        try:
            outcomes = [storage.insert("ns", b"%d" % i, payload(i, 20_000)) for i in range(12)]
            assert InsertOutcome.FAILED in outcomes
            assert storage.last_failure is not None and "full" in storage.last_failure
            first_failed = outcomes.index(InsertOutcome.FAILED)
            assert set(outcomes[:first_failed]) == {InsertOutcome.STORED}
            assert all(
                storage.get("ns", b"%d" % i) == payload(i, 20_000) for i in range(first_failed)
            )
        finally:
            storage.close()


def test_a_degraded_environment_still_scans_what_its_database_held(
    root: Path, tmp_path: Path
) -> None:
    with mounted_tmpfs(tmp_path / "image", "size=4m") as where:
        config.override(cache_dir=where)
        fill(ArtifactStore("cpu", "fp"), 3)
        ENVIRONMENTS.reset()
        assert (
            subprocess.run(["mount", "-o", "remount,ro", str(where)], check=False).returncode == 0
        )
        store = ArtifactStore("cpu", "fp")
        fill(store, 5)
        keys = [key for key, _ in Store(store.namespace).scan()]
        assert sorted(keys) == sorted(
            {store.key(kernel(i)) for i in range(5)}
            | {store.source_key(f"text {i}") for i in range(5)}
        )
        ENVIRONMENTS.reset()


def test_a_database_of_a_newer_schema_is_left_unchanged_with_one_warning(
    root: Path, store_warnings: list[logging.LogRecord]
) -> None:
    fill(ArtifactStore("cpu", "fp"), 3)
    ENVIRONMENTS.reset()
    database = environment.path()
    newer = str(int(SCHEMA_VERSION) + 1)
    with closing(sqlite3.connect(database)) as db, db:
        db.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", (newer,))
    before = database.read_bytes()
    store = ArtifactStore("cpu", "fp")
    assert store.stored(kernel(0)) is None
    fill(store, 3)
    assert all_served(store, 3)
    assert not store.persists()
    ENVIRONMENTS.reset()
    assert database.read_bytes() == before
    assert aside(root) == []
    assert len(store_warnings) == 1
    assert f"newer cubejit (schema version {newer};" in store_warnings[0].getMessage()


def test_setting_a_damaged_file_aside_never_renames_one_another_process_just_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = tmp_path / "e.db"
    database.write_bytes(b"this is not a database; " * 500)
    other = SqliteStorage.open(tmp_path / "made-by-another.db")
    other.insert("ns", b"key", b"theirs")
    other.close()
    real = storage_sqlite.connect
    raced: list[Path] = []

    def connect_while_another_process_repairs(
        path: Path, kind: str, **options: bool
    ) -> tuple[sqlite3.Connection, str]:
        try:
            return real(path, kind, **options)
        except Damaged:
            if not raced:
                raced.append(path)
                os.replace(tmp_path / "made-by-another.db", path)
            raise

    monkeypatch.setattr(storage_sqlite, "connect", connect_while_another_process_repairs)
    storage = SqliteStorage.open(database)
    try:
        assert raced == [database]
        assert storage.get("ns", b"key") == b"theirs"
        assert aside(tmp_path) == []
    finally:
        storage.close()


def test_a_root_on_a_network_filesystem_keeps_a_rollback_journal_with_one_warning(
    root: Path, store_warnings: list[logging.LogRecord], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ENVIRONMENTS, "filesystem_type", lambda path: 0x6969)
    store = ArtifactStore("cpu", "fp")
    fill(store, 5)
    assert store.persists()
    database = environment.path()
    assert not Path(f"{database}-wal").exists()
    with closing(sqlite3.connect(database)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    ENVIRONMENTS.reset()
    assert all_served(ArtifactStore("cpu", "fp"), 5)
    assert [r.getMessage().count("is on NFS") for r in store_warnings] == [1, 1]


def test_the_filesystem_seam_reads_the_statfs_magic_of_the_root(tmp_path: Path) -> None:
    assert filesystem.network_filesystem(filesystem.filesystem_type(tmp_path)) is None
    with mounted_tmpfs(tmp_path / "tmpfs", "size=64k") as where:
        assert filesystem.filesystem_type(where / "not" / "yet") == 0x01021994
    assert filesystem.network_filesystem(0x6969) == "NFS"
    assert filesystem.network_filesystem(0xFF534D42) == "CIFS"
