"""An environment on disk: one SQLite database file shared by every process that uses it.

Several processes read and write one file at once, so the database runs in WAL mode (readers
never wait for the writer), waits for a lock instead of failing, and makes every
check-and-write one ``BEGIN IMMEDIATE`` transaction: of two processes inserting one key,
exactly one writes it. A process keeps one connection per database, shared by its threads
under a lock. Opening the file and checking its schema is
:mod:`~cubejit.environment.sqlite_file`'s.

A file that is not a database, a damaged one, or one of an older schema version is renamed
aside (``<name>.db.damaged-<time>-<pid>``) and rebuilt empty, with a WARNING: the cost is
compiling again, never a crash; one of a newer schema version is left alone
(:class:`~cubejit.environment.sqlite_file.NewerSchemaError`). A write the disk refuses is an
:attr:`InsertOutcome.FAILED` outcome. Nothing is opened through a symbolic link at the
database's path or its WAL files.

A scan reads values a few megabytes at a time, so reading a namespace of any size (an export,
an import) holds at most that much, or one entry, in memory.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from cubejit.environment.sqlite_file import (
    COMPANIONS,
    ENVIRONMENT,
    READ_META,
    WRITE_META,
    Damaged,
    connect,
    immediate,
    inode,
    is_damage,
    set_aside,
)
from cubejit.environment.storage import LOCAL, InsertOutcome, NamespaceSummary, accepts
from cubejit.errors import StoreError
from cubejit.trust import make_private_directory

T = TypeVar("T")

log = logging.getLogger("cubejit.environment")

_SCAN_PAGE = 256
SCAN_BYTES = 8 << 20
"""Bytes of values a scan reads at once (one entry, when a single entry is larger)."""
TOUCH_AFTER_S = 86_400.0
"""An entry read is marked used (for ``cubejit env prune``, which drops the least recently
used first) when its mark is older than this: a day's precision is all pruning needs, and a
warm store is then written at most once a day per entry."""
SELECT_VALUE = "SELECT value, used_at FROM entries WHERE namespace = ? AND key = ?"
SELECT_VALUES = "SELECT key, value, used_at FROM entries WHERE namespace = ? AND key IN ({})"
_KEYS_PER_QUERY = 500
"""Keys bound in one ``IN (...)`` (SQLite allows at least 999 parameters)."""
TOUCH_ENTRY = "UPDATE entries SET used_at = ? WHERE namespace = ? AND key = ?"
SELECT_ENTRY = "SELECT value, origin FROM entries WHERE namespace = ? AND key = ?"
INSERT_ENTRY = (
    "INSERT INTO entries (namespace, key, value, origin, stored_at, used_at) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
REPLACE_ENTRY = (
    "UPDATE entries SET value = ?, origin = ?, stored_at = ?, used_at = ? "
    "WHERE namespace = ? AND key = ?"
)
SET_ORIGIN = "UPDATE entries SET origin = ? WHERE namespace = ? AND key = ?"
DELETE_ENTRY = "DELETE FROM entries WHERE namespace = ? AND key = ?"
DELETE_NAMESPACE = "DELETE FROM entries WHERE namespace = ?"
SCAN_KEYS = (
    "SELECT key, length(value) FROM entries WHERE namespace = ? AND key > ? ORDER BY key LIMIT ?"
)
SCAN_RANGE = (
    "SELECT key, value FROM entries WHERE namespace = ? AND key > ? AND key <= ? ORDER BY key"
)
CREATE_SIGNATURES = (
    "CREATE TABLE IF NOT EXISTS signatures ("
    "namespace TEXT NOT NULL, key BLOB NOT NULL, signature BLOB NOT NULL, "
    "PRIMARY KEY (namespace, key))"
)
SELECT_SIGNATURE = "SELECT signature FROM signatures WHERE namespace = ? AND key = ?"
WRITE_SIGNATURE = "INSERT OR REPLACE INTO signatures (namespace, key, signature) VALUES (?, ?, ?)"
LIST_ENTRIES = (
    "SELECT namespace, key, length(value), stored_at, used_at FROM entries ORDER BY used_at, key"
)
SELECT_PREFIXED = (
    "SELECT namespace, key, value, stored_at FROM entries WHERE key >= ? AND key < ? "
    "ORDER BY namespace, key"
)
QUICK_CHECK = "PRAGMA quick_check"
SUMMARIES = (
    "SELECT namespace, count(*), sum(length(value)) FROM entries "
    "GROUP BY namespace ORDER BY namespace"
)


@dataclass(frozen=True, slots=True)
class EntryInfo:
    """One entry as tools that manage an environment see it, without its value."""

    namespace: str
    key: bytes
    size: int
    """Bytes of its value."""
    stored_at: float
    """When it was written (``time.time()``)."""
    used_at: float
    """When it was last read, to a day's precision (see :data:`TOUCH_AFTER_S`)."""


class SqliteStorage:
    """Entries in one SQLite file. Open with :meth:`open`; every method is thread-safe."""

    persists = True

    def __init__(
        self,
        path: Path,
        connection: sqlite3.Connection,
        kind: str,
        *,
        readonly: bool,
        repair: bool,
        wal: bool = True,
    ) -> None:
        self.path = path
        """The database file."""
        self.kind = kind
        """``environment`` or ``bundle``."""
        self.last_failure: str | None = None
        self._connection = connection
        self._readonly = readonly
        self._repair = repair
        self._wal = wal
        self._inode = inode(path)
        self._lock = threading.RLock()

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        kind: str = ENVIRONMENT,
        readonly: bool = False,
        repair: bool = True,
        wal: bool = True,
    ) -> SqliteStorage:
        """Opens the database at ``path``, creating it (of ``kind``) if absent.

        With ``repair``, a file that is damaged or of another schema is set aside with a
        WARNING and rebuilt; without it, that is a :class:`StoreError`. A file that cannot be
        created, opened or written is a :class:`StoreError` too, and so is a symbolic link at
        ``path`` or its WAL files; one of a newer schema is a
        :class:`~cubejit.environment.sqlite_file.NewerSchemaError`. A new database (and any
        missing directory above it) is made private: ``0600``, ``0700``.
        """
        try:
            if not readonly:
                for file in (path, *(path.with_name(path.name + s) for s in COMPANIONS)):
                    if file.is_symlink():
                        raise StoreError(
                            f"{file} is a symbolic link; cubejit does not follow links in its "
                            "store: remove it"
                        )
                make_private_directory(path.parent)
            seen = inode(path)
            try:
                connection, found = connect(path, kind, readonly=readonly, wal=wal)
            except Damaged as e:
                if not repair or readonly:
                    raise StoreError(f"{path} is not a cubejit store: {e}") from None
                set_aside(path, str(e), seen)
                connection, found = connect(path, kind, readonly=False, wal=wal)
        except (OSError, sqlite3.Error, Damaged) as e:
            raise StoreError(str(e)) from e
        return cls(path, connection, found, readonly=readonly, repair=repair, wal=wal)

    def get(self, namespace: str, key: bytes) -> bytes | None:
        try:
            row = self._run(lambda c: c.execute(SELECT_VALUE, (namespace, key)).fetchone())
        except (sqlite3.Error, StoreError) as e:
            log.debug("cannot read %s: %s", self.path, e)
            return None
        if row is None:
            return None
        now = time.time()
        if now - row[1] > TOUCH_AFTER_S and not self._readonly:
            self._write(TOUCH_ENTRY, (now, namespace, key))
        return bytes(row[0])

    def get_many(self, namespace: str, keys: Collection[bytes]) -> dict[bytes, bytes]:
        """One query per :data:`_KEYS_PER_QUERY` keys, then one write marking those found
        used, when any mark is a day old."""
        wanted = list(keys)
        rows: list[tuple[bytes, bytes, float]] = []
        try:
            for start in range(0, len(wanted), _KEYS_PER_QUERY):
                part = wanted[start : start + _KEYS_PER_QUERY]
                query = SELECT_VALUES.format(", ".join("?" * len(part)))
                rows += self._run(functools.partial(_fetch_all, query, (namespace, *part)))
        except (sqlite3.Error, StoreError) as e:
            log.debug("cannot read %s: %s", self.path, e)
            return {}
        now = time.time()
        stale = [(now, namespace, k) for k, _, used in rows if now - used > TOUCH_AFTER_S]
        if stale and not self._readonly:
            self._write_many(TOUCH_ENTRY, stale)
        return {bytes(k): bytes(v) for k, v, _ in rows}

    def insert(
        self, namespace: str, key: bytes, value: bytes, origin: str = LOCAL
    ) -> InsertOutcome:
        def check_and_write(connection: sqlite3.Connection) -> InsertOutcome:
            with immediate(connection):
                return _check_and_write(connection, namespace, key, value, origin)

        try:
            return self._run(check_and_write)
        except (sqlite3.Error, StoreError) as e:
            self.last_failure = f"{self.path}: {e}"
            return InsertOutcome.FAILED

    def insert_all(
        self,
        entries: Iterable[tuple[str, bytes, bytes, str]],
        sign: Callable[[str, bytes, bytes], bytes] | None = None,
    ) -> int:
        """Inserts ``(namespace, key, value, origin)`` entries in one transaction, by the
        rules of :meth:`insert`, with ``sign``'s signature of each kept beside it (see
        :meth:`signature`); how many were stored. ``entries`` is consumed one at a time, so a
        generator keeps memory to one entry. Raises :class:`StoreError` on failure, leaving the
        database as it was."""

        def write(connection: sqlite3.Connection) -> int:
            stored = 0
            with immediate(connection):
                if sign is not None:
                    connection.execute(CREATE_SIGNATURES)
                for namespace, key, value, origin in entries:
                    outcome = _check_and_write(connection, namespace, key, value, origin)
                    stored += outcome is InsertOutcome.STORED
                    if sign is not None:
                        signature = sign(namespace, key, value)
                        connection.execute(WRITE_SIGNATURE, (namespace, key, signature))
            return stored

        try:
            return self._run(write)
        except sqlite3.Error as e:
            raise StoreError(f"cannot write {self.path}: {e}") from e

    def purge_key(self, namespace: str, key: bytes) -> None:
        self._write(DELETE_ENTRY, (namespace, key))

    def purge(self, namespace: str) -> None:
        self._write(DELETE_NAMESPACE, (namespace,))

    def scan(self, namespace: str) -> Iterator[tuple[bytes, bytes]]:
        """Every entry of ``namespace`` in key order, read :data:`SCAN_BYTES` of values (or
        one entry) at a time."""
        after = b""
        while True:
            try:
                keys = self._run(
                    lambda c, a=after: c.execute(SCAN_KEYS, (namespace, a, _SCAN_PAGE)).fetchall()
                )
                for first, last in _runs(keys, SCAN_BYTES, after):

                    def values(
                        c: sqlite3.Connection, a: bytes = first, b: bytes = last
                    ) -> list[tuple[bytes, bytes]]:
                        return c.execute(SCAN_RANGE, (namespace, a, b)).fetchall()

                    rows = self._run(values)
                    for key, value in rows:
                        yield bytes(key), bytes(value)
                    del rows
            except (sqlite3.Error, StoreError) as e:
                log.debug("cannot read %s: %s", self.path, e)
                return
            if len(keys) < _SCAN_PAGE:
                return
            after = bytes(keys[-1][0])

    def summaries(self) -> list[NamespaceSummary]:
        try:
            rows = self._run(lambda c: c.execute(SUMMARIES).fetchall())
        except (sqlite3.Error, StoreError) as e:
            log.debug("cannot read %s: %s", self.path, e)
            return []
        return [NamespaceSummary(ns, count, size or 0) for ns, count, size in rows]

    def signature(self, namespace: str, key: bytes) -> bytes | None:
        """The signature kept beside an entry (bundles keep them, see
        :mod:`~cubejit.environment.bundle`); ``None`` when there is none."""
        try:
            row = self._run(lambda c: c.execute(SELECT_SIGNATURE, (namespace, key)).fetchone())
        except (sqlite3.Error, StoreError):
            return None
        return None if row is None else bytes(row[0])

    def entries(self) -> list[EntryInfo]:
        """Every entry, the least recently used first (for pruning)."""
        rows = self._run(lambda c: c.execute(LIST_ENTRIES).fetchall())
        return [EntryInfo(ns, bytes(k), size, stored, used) for ns, k, size, stored, used in rows]

    def prefixed(self, prefix: bytes) -> list[tuple[str, bytes, bytes, float]]:
        """``(namespace, key, value, stored_at)`` of every entry whose key starts with
        ``prefix`` (a non-empty prefix whose last byte is below 255)."""
        end = prefix[:-1] + bytes((prefix[-1] + 1,))
        rows = self._run(lambda c: c.execute(SELECT_PREFIXED, (prefix, end)).fetchall())
        return [(ns, bytes(k), bytes(v), float(at)) for ns, k, v, at in rows]

    def health(self) -> str:
        """SQLite's ``quick_check`` of the file: ``"ok"`` or what it found wrong."""
        return str(self._run(lambda c: c.execute(QUICK_CHECK).fetchone())[0])

    def compact(self) -> None:
        """Gives the space of deleted entries back to the disk, when no other process is busy
        with the file (otherwise the space is reused by later entries)."""
        try:
            self._run(lambda c: (c.execute("VACUUM"), c.execute("PRAGMA wal_checkpoint(TRUNCATE)")))
        except sqlite3.Error as e:
            log.debug("cannot compact %s: %s", self.path, e)

    def meta(self, name: str) -> str | None:
        """A value of the ``meta`` table (``schema_version``, ``kind``, ``name``)."""
        row = self._run(lambda c: c.execute(READ_META, (name,)).fetchone())
        return None if row is None else str(row[0])

    def set_meta(self, name: str, value: str) -> None:
        """Writes a value of the ``meta`` table."""
        self._run(lambda c: c.execute(WRITE_META, (name, value)))

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    def _write(self, statement: str, parameters: tuple[object, ...]) -> None:
        try:
            self._run(lambda c: c.execute(statement, parameters))
        except (sqlite3.Error, StoreError) as e:
            log.debug("cannot write %s: %s", self.path, e)

    def _write_many(self, statement: str, rows: Sequence[tuple[object, ...]]) -> None:
        def write(connection: sqlite3.Connection) -> None:
            with immediate(connection):
                connection.executemany(statement, rows)

        try:
            self._run(write)
        except (sqlite3.Error, StoreError) as e:
            log.debug("cannot write %s: %s", self.path, e)

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Runs ``work`` under the lock; a database found damaged is rebuilt (when allowed)
        and ``work`` runs once more on the new one."""
        with self._lock:
            try:
                return work(self._connection)
            except sqlite3.DatabaseError as e:
                if not (is_damage(e) and self._repair and not self._readonly):
                    raise
                self._rebuild(str(e))
                return work(self._connection)

    def _rebuild(self, reason: str) -> None:
        self._connection.close()
        set_aside(self.path, reason, self._inode)
        try:
            self._connection, self.kind = connect(
                self.path, self.kind, readonly=False, wal=self._wal
            )
        except Damaged as e:
            raise StoreError(f"cannot rebuild {self.path}: {e}") from None
        self._inode = inode(self.path)


def _fetch_all(
    query: str, parameters: tuple[object, ...], connection: sqlite3.Connection
) -> list[Any]:
    return connection.execute(query, parameters).fetchall()


def _runs(
    keys: list[tuple[bytes, int]], budget: int, after: bytes
) -> Iterator[tuple[bytes, bytes]]:
    """Splits a page of ``(key, value size)`` rows, the keys that follow ``after``, into
    ranges ``(first, last]`` whose values add up to at most ``budget`` bytes (or hold one
    entry)."""
    total = 0
    for i, (_, size) in enumerate(keys):
        if total and total + size > budget:
            yield after, bytes(keys[i - 1][0])
            after, total = bytes(keys[i - 1][0]), 0
        total += size
    if keys:
        yield after, bytes(keys[-1][0])


def _check_and_write(
    connection: sqlite3.Connection, namespace: str, key: bytes, value: bytes, origin: str
) -> InsertOutcome:
    row = connection.execute(SELECT_ENTRY, (namespace, key)).fetchone()
    if row is None:
        now = time.time()
        connection.execute(INSERT_ENTRY, (namespace, key, value, origin, now, now))
        return InsertOutcome.STORED
    outcome = accepts(bytes(row[0]), row[1], value, origin)
    if outcome is InsertOutcome.STORED:
        now = time.time()
        connection.execute(REPLACE_ENTRY, (value, origin, now, now, namespace, key))
    elif outcome is InsertOutcome.ALREADY_PRESENT and origin == LOCAL and row[1] != LOCAL:
        connection.execute(SET_ORIGIN, (LOCAL, namespace, key))
    return outcome
