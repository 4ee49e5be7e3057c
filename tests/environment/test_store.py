"""A Store over each storage: insert-only, first writer wins, local replaces bundle."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from cubejit import config, environment
from cubejit.environment import InsertOutcome, Store
from cubejit.environment.sqlite_file import BUSY_TIMEOUT_MS
from cubejit.environment.storage import BUNDLE, LOCAL, Storage
from cubejit.environment.storage_memory import MemoryStorage
from cubejit.environment.storage_sqlite import SqliteStorage

NS = "cpu/0.1.0/test"


@pytest.fixture(params=["sqlite", "memory"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    made: Storage = (
        SqliteStorage.open(tmp_path / "e.db") if request.param == "sqlite" else MemoryStorage()
    )
    yield made
    made.close()


def test_the_first_writer_wins(storage: Storage) -> None:
    assert storage.insert(NS, b"k", b"first") is InsertOutcome.STORED
    assert storage.insert(NS, b"k", b"first") is InsertOutcome.ALREADY_PRESENT
    assert storage.insert(NS, b"k", b"second") is InsertOutcome.REFUSED
    assert storage.get(NS, b"k") == b"first"


def test_a_local_value_replaces_one_from_a_bundle_and_never_the_reverse(storage: Storage) -> None:
    assert storage.insert(NS, b"imported", b"theirs", BUNDLE) is InsertOutcome.STORED
    assert storage.insert(NS, b"imported", b"ours", LOCAL) is InsertOutcome.STORED
    assert storage.get(NS, b"imported") == b"ours"
    assert storage.insert(NS, b"imported", b"theirs", BUNDLE) is InsertOutcome.REFUSED
    assert storage.insert(NS, b"local", b"ours", LOCAL) is InsertOutcome.STORED
    assert storage.insert(NS, b"local", b"theirs", BUNDLE) is InsertOutcome.REFUSED
    assert storage.get(NS, b"local") == b"ours"


def test_a_bundle_value_made_local_by_the_same_write_is_then_protected(storage: Storage) -> None:
    storage.insert(NS, b"k", b"same", BUNDLE)
    assert storage.insert(NS, b"k", b"same", LOCAL) is InsertOutcome.ALREADY_PRESENT
    assert storage.insert(NS, b"k", b"other", LOCAL) is InsertOutcome.REFUSED


def test_namespaces_keep_their_entries_apart(storage: Storage) -> None:
    storage.insert("cpu/0.1.0/a", b"k", b"for a")
    storage.insert("cpu/0.1.0/b", b"k", b"for b, longer")
    assert storage.get("cpu/0.1.0/a", b"k") == b"for a"
    assert storage.get("cpu/0.1.0/c", b"k") is None
    assert [(s.namespace, s.entries, s.bytes) for s in storage.summaries()] == [
        ("cpu/0.1.0/a", 1, 5),
        ("cpu/0.1.0/b", 1, 13),
    ]


def test_scan_purge_key_and_purge(storage: Storage) -> None:
    for i in range(300):
        storage.insert(NS, b"k%03d" % i, b"v%d" % i)
    storage.insert("other", b"k", b"v")
    assert [k for k, _ in storage.scan(NS)] == [b"k%03d" % i for i in range(300)]
    storage.purge_key(NS, b"k007")
    assert storage.get(NS, b"k007") is None
    storage.purge(NS)
    assert list(storage.scan(NS)) == []
    assert storage.get("other", b"k") == b"v"


def test_the_sqlite_storage_is_a_wal_database_with_a_schema_version(tmp_path: Path) -> None:
    SqliteStorage.open(tmp_path / "e.db").close()
    with sqlite3.connect(tmp_path / "e.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT value FROM meta WHERE name='schema_version'").fetchone() == ("2",)
        columns = [row[1] for row in db.execute("PRAGMA table_info(entries)")]
    assert columns[:4] == ["namespace", "key", "value", "origin"]
    assert BUSY_TIMEOUT_MS >= 5000


def test_reading_an_entry_marks_it_used_at_most_once_a_day(tmp_path: Path) -> None:
    storage = SqliteStorage.open(tmp_path / "e.db")
    storage.insert(NS, b"old", b"v")
    storage.insert(NS, b"fresh", b"v")

    def used_at(key: bytes) -> float:
        with closing(sqlite3.connect(tmp_path / "e.db")) as db:
            return db.execute("SELECT used_at FROM entries WHERE key = ?", (key,)).fetchone()[0]

    with closing(sqlite3.connect(tmp_path / "e.db")) as db, db:
        db.execute("UPDATE entries SET used_at = used_at - 2 * 86400 WHERE key = ?", (b"old",))
    fresh, old = used_at(b"fresh"), used_at(b"old")
    assert storage.get(NS, b"old") == b"v" and storage.get(NS, b"fresh") == b"v"
    assert used_at(b"old") > old + 86400
    assert used_at(b"fresh") == fresh
    storage.close()


def test_threads_share_one_connection_and_one_writer_wins_each_key(tmp_path: Path) -> None:
    storage = SqliteStorage.open(tmp_path / "e.db")
    outcomes: list[tuple[int, InsertOutcome]] = []
    start = threading.Barrier(8)

    def write(worker: int) -> None:
        start.wait()
        for i in range(25):
            outcome = storage.insert(NS, b"k%d" % i, b"from %d" % worker)
            outcomes.append((i, outcome))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stored = [i for i, outcome in outcomes if outcome is InsertOutcome.STORED]
    assert sorted(stored) == list(range(25))
    assert InsertOutcome.FAILED not in {o for _, o in outcomes}
    storage.close()


def test_a_store_keeps_no_copy_so_a_purge_by_another_store_is_seen_at_once(root: Path) -> None:
    store = Store(NS)
    assert store.insert(b"k", b"v") is InsertOutcome.STORED
    assert store.get(b"k") == b"v"
    Store(NS).purge_key(b"k")
    assert store.get(b"k") is None


def test_a_store_reads_many_keys_together_and_skips_the_missing(root: Path) -> None:
    store = Store(NS)
    for i in range(700):
        store.insert(b"k%d" % i, b"v%d" % i)
    wanted = [b"k%d" % i for i in range(0, 700, 3)] + [b"absent"]
    assert store.get_many(wanted) == {k: b"v" + k[1:] for k in wanted[:-1]}
    assert dict(store.scan())[b"k5"] == b"v5"
    store.purge()
    assert store.get_many(wanted) == {}


def test_with_the_compilation_cache_off_entries_live_in_memory(root: Path) -> None:
    config.override(compilation_cache=False)
    store = Store(NS)
    assert store.insert(b"k", b"v") is InsertOutcome.STORED
    assert store.get(b"k") == b"v"
    assert not store.storage().persists
    assert not root.exists()
    assert environment.namespaces()[0].namespace == NS
