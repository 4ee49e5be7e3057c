"""Opening an SQLite file as a cubejit database: the connection, the schema and its check, and
what is done with a file that cannot be one.

A new file gets the schema (tables ``meta`` and ``entries``, a schema version, a kind); an
existing one is checked against it. A file that is not SQLite, is damaged or has another schema
is reported as :class:`Damaged`, and :func:`set_aside` renames it out of the way so a new one
can start. A file of a newer schema is none of this cubejit's business: it is
:class:`NewerSchemaError`, and left exactly as it is. New files are created ``0600`` (SQLite
gives its ``-wal`` and ``-shm`` files the database's mode).
:mod:`~cubejit.environment.storage_sqlite` keeps the entries in it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cubejit.errors import StoreError
from cubejit.trust import create_private_file

log = logging.getLogger("cubejit.environment")

SCHEMA_VERSION = "2"
BUSY_TIMEOUT_MS = 10_000
ENVIRONMENT = "environment"
"""``meta.kind`` of a database a machine compiles into."""
BUNDLE_KIND = "bundle"
"""``meta.kind`` of a file written by ``export_bundle``."""
OWN_TABLES = {"meta", "entries"}
DAMAGE_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
READ_ONLY_PLACE_CODES = (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY_DIRECTORY)
"""What a read-only connection to a WAL database meets where it cannot make the ``-shm``
file: a read-only mount, or a directory this user may not write (a shared, root-owned store)."""
ASIDE_MARK = ".damaged-"
COMPANIONS = ("-wal", "-shm")

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


class NewerSchemaError(StoreError):
    """A database written by a newer cubejit, with a schema this one does not know: it is
    neither read, written nor set aside, so that the newer cubejit finds it as it left it."""

    def __init__(self, path: Path, version: str) -> None:
        super().__init__(
            f"{path} was written by a newer cubejit (schema version {version}; this one "
            f"knows {SCHEMA_VERSION}); it is left unchanged"
        )
        self.version = version


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
    a database of this schema, :class:`NewerSchemaError` for one of a newer schema."""
    if not readonly:
        create_private_file(path)
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
            if not readonly or e.sqlite_errorcode not in READ_ONLY_PLACE_CODES:
                raise
            connection.close()
            return connect_immutable(path, kind)
    except sqlite3.DatabaseError as e:
        connection.close()
        if is_damage(e) or getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_ERROR:
            raise Damaged(str(e)) from None
        raise
    except (Damaged, NewerSchemaError):
        connection.close()
        raise
    return connection, found


def connect_immutable(path: Path, kind: str) -> tuple[sqlite3.Connection, str]:
    """A read-only connection to a WAL database where no ``-shm`` file can be made (media
    nothing may write, a directory this user may not write), which SQLite opens only as
    immutable. Values keep their checksums, so a
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
        # Two connections turning one new file to WAL at once each hold a shared lock and want
        # the exclusive one; SQLite answers one "database is locked" without waiting.
        with directory_lock(path_of(connection).parent):
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
        found = "none" if version is None else str(version[0])
        if is_newer(found):
            raise NewerSchemaError(path_of(connection), found)
        raise Damaged(f"schema version {found}; this cubejit uses {SCHEMA_VERSION}")
    found_kind = connection.execute(READ_META, ("kind",)).fetchone()
    if found_kind is None or found_kind[0] not in (ENVIRONMENT, BUNDLE_KIND):
        raise Damaged("no kind in its meta table")
    if not readonly:
        mode = "WAL" if wal else "DELETE"
        connection.execute(f"PRAGMA journal_mode = {mode}")
        connection.execute("PRAGMA synchronous = NORMAL" if wal else "PRAGMA synchronous = FULL")
    return str(found_kind[0])


def is_newer(version: str) -> bool:
    """Whether ``version`` is a schema version later than this cubejit's."""
    try:
        return int(version) > int(SCHEMA_VERSION)
    except ValueError:
        return False


def path_of(connection: sqlite3.Connection) -> Path:
    """The file of a connection's main database."""
    for _, name, file in connection.execute("PRAGMA database_list"):
        if name == "main":
            return Path(file)
    return Path("?")


@contextmanager
def directory_lock(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``folder`` for the block, shared with every cubejit process
    that sets a file of that folder aside or makes a new store there."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def set_aside(path: Path, reason: str, seen: int | None) -> Path | None:
    """Renames a damaged database (and its WAL files) out of the way, with a WARNING; the new
    name. ``seen`` is the inode of the file found damaged: when the file at ``path`` is no
    longer that one (another process set it aside and started a new one), nothing is renamed
    and the answer is ``None``. Raises :class:`OSError` when the rename is refused."""
    with directory_lock(path.parent):
        if inode(path) != seen:
            log.debug("%s was replaced since it was found damaged; it is left as it is", path)
            return None
        aside = path.with_name(
            f"{path.name}{ASIDE_MARK}{time.strftime('%Y%m%d%H%M%S')}-{os.getpid()}"
        )
        os.replace(path, aside)
        for suffix in COMPANIONS:
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


def aside_files(path: Path) -> list[Path]:
    """The files :func:`set_aside` made of the database ``path``, oldest first (their WAL
    files not among them: :func:`on_disk` counts those)."""
    return sorted(
        p
        for p in path.parent.glob(f"{path.name}{ASIDE_MARK}*")
        if not p.name.endswith(COMPANIONS) and not p.is_symlink()
    )


def on_disk(path: Path) -> int:
    """Bytes a database file and its WAL files take."""
    total = 0
    for file in (path, *(Path(f"{path}{suffix}") for suffix in COMPANIONS)):
        try:
            total += file.lstat().st_size
        except OSError:
            continue
    return total


def remove_with_companions(path: Path) -> None:
    """Deletes a database file and its WAL files."""
    for file in (path, *(Path(f"{path}{suffix}") for suffix in COMPANIONS)):
        file.unlink(missing_ok=True)


def inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None
