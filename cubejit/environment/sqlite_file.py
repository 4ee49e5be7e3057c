"""Opening an SQLite file as a cubejit database: the connection, the schema and its check, and
what is done with a file that cannot be one.

A new file gets the schema (tables ``meta`` and ``entries``, a schema version, a kind); an
existing one is checked against it. A file that is not SQLite, is damaged or has another schema
is reported as :class:`Damaged`, and :func:`set_aside` renames it out of the way so a new one
can start. :mod:`~cubejit.environment.storage_sqlite` keeps the entries in it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from pathlib import Path

log = logging.getLogger("cubejit.environment")

SCHEMA_VERSION = "2"
BUSY_TIMEOUT_MS = 10_000
ENVIRONMENT = "environment"
"""``meta.kind`` of a database a machine compiles into."""
BUNDLE_KIND = "bundle"
"""``meta.kind`` of a file written by ``export_bundle``."""
OWN_TABLES = {"meta", "entries"}
DAMAGE_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)

SELECT_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table'"
CREATE_META = "CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
CREATE_ENTRIES = (
    "CREATE TABLE entries ("
    " namespace TEXT NOT NULL,"
    " key BLOB NOT NULL,"
    " value BLOB NOT NULL,"
    " origin TEXT NOT NULL,"
    " stored_at REAL NOT NULL,"
    " used_at REAL NOT NULL,"
    " PRIMARY KEY (namespace, key)"
    ") WITHOUT ROWID"
)
WRITE_META = "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)"
READ_META = "SELECT value FROM meta WHERE name = ?"


class Damaged(Exception):
    """A file at the database's path that this cubejit cannot use as its database."""


def is_damage(error: sqlite3.Error) -> bool:
    """Whether ``error`` says the file is damaged or not a database at all."""
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in DAMAGE_CODES


class immediate:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back if anything in between raises."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def __enter__(self) -> None:
        self._connection.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is None:
            self._connection.execute("COMMIT")
        elif self._connection.in_transaction:
            try:
                self._connection.execute("ROLLBACK")
            except sqlite3.Error as e:
                log.debug("rollback failed: %s", e)


def connect(path: Path, kind: str, *, readonly: bool, wal: bool) -> tuple[sqlite3.Connection, str]:
    """A connection to ``path`` with the schema checked (and created if the file is new);
    the connection and the database's kind. Raises :class:`Damaged` for a file that is not
    a database of this schema."""
    target = f"file:{path}?mode=ro" if readonly else str(path)
    connection = sqlite3.connect(
        target,
        uri=readonly,
        timeout=BUSY_TIMEOUT_MS / 1000,
        isolation_level=None,
        check_same_thread=False,
    )
    try:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        try:
            found = checked_schema(connection, kind, readonly=readonly, wal=wal)
        except sqlite3.OperationalError as e:
            if not readonly or e.sqlite_errorcode != sqlite3.SQLITE_CANTOPEN:
                raise
            connection.close()
            return connect_immutable(path, kind)
    except sqlite3.DatabaseError as e:
        connection.close()
        if is_damage(e) or getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_ERROR:
            raise Damaged(str(e)) from None
        raise
    except Damaged:
        connection.close()
        raise
    return connection, found


def connect_immutable(path: Path, kind: str) -> tuple[sqlite3.Connection, str]:
    """A read-only connection to a WAL database on media nothing may write (no ``-shm`` file
    can be made there), which SQLite opens only as immutable. Values keep their checksums, so a
    file changed under it anyway serves nothing wrong."""
    connection = sqlite3.connect(
        f"file:{path}?mode=ro&immutable=1", uri=True, isolation_level=None, check_same_thread=False
    )
    try:
        return connection, checked_schema(connection, kind, readonly=True, wal=True)
    except BaseException:
        connection.close()
        raise


def checked_schema(connection: sqlite3.Connection, kind: str, *, readonly: bool, wal: bool) -> str:
    """Creates this module's tables in a file that has none of them (other tables, such as
    the records', may be there already) and checks them; the database's kind."""
    tables = {row[0] for row in connection.execute(SELECT_TABLES)}
    if not tables & OWN_TABLES and not readonly:
        if wal:
            connection.execute("PRAGMA journal_mode = WAL")
        with immediate(connection):
            tables = {row[0] for row in connection.execute(SELECT_TABLES)}
            if not tables & OWN_TABLES:
                connection.execute(CREATE_META)
                connection.execute(CREATE_ENTRIES)
                connection.execute(WRITE_META, ("schema_version", SCHEMA_VERSION))
                connection.execute(WRITE_META, ("kind", kind))
                tables |= OWN_TABLES
    if not OWN_TABLES <= tables:
        raise Damaged(f"tables {sorted(tables)} are not those of a cubejit store")
    version = connection.execute(READ_META, ("schema_version",)).fetchone()
    if version is None or version[0] != SCHEMA_VERSION:
        found = "none" if version is None else version[0]
        raise Damaged(f"schema version {found}; this cubejit uses {SCHEMA_VERSION}")
    found_kind = connection.execute(READ_META, ("kind",)).fetchone()
    if found_kind is None or found_kind[0] not in (ENVIRONMENT, BUNDLE_KIND):
        raise Damaged("no kind in its meta table")
    if not readonly:
        mode = "WAL" if wal else "DELETE"
        connection.execute(f"PRAGMA journal_mode = {mode}")
        connection.execute("PRAGMA synchronous = NORMAL" if wal else "PRAGMA synchronous = FULL")
    return str(found_kind[0])


def set_aside(path: Path, reason: str) -> Path:
    """Renames a damaged database (and its WAL files) out of the way, with a WARNING; the new
    name. Raises :class:`OSError` when the rename is refused."""
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d%H%M%S')}-{os.getpid()}")
    os.replace(path, aside)
    for suffix in ("-wal", "-shm"):
        companion = Path(f"{path}{suffix}")
        if companion.exists():
            os.replace(companion, Path(f"{aside}{suffix}"))
    log.warning(
        "cubejit: the compilation store %s cannot be used (%s); it was set aside as %s "
        "and a new one started: its kernels compile again",
        path,
        reason,
        aside,
    )
    return aside


def inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None
