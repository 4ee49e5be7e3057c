"""What each process compiled, kept in the environment it compiled into.

A **session** is one process's use of one environment: an id, when it started, the cubejit
version, a label (:func:`label`), the pid, OS and architecture. Its **batch records** (kernels
asked, threads, wall time) and **compilation records** (one per kernel trip through the loader:
kernel, artifact key, outcome, work, the thread and time of each phase, and at record level
``full`` the IR and source) are stamped with the session and their order in it.

A session is written only once it changed the environment (a batch compiled or re-keyed a
kernel). Until then its records wait in memory, at most :data:`PENDING_LIMIT` bytes of them,
the oldest dropped first, so a server running for days on a warm store writes nothing. Once
written, each later batch is written as it ends. After a session is first written, sessions
beyond ``CUBEJIT_KEEP_SESSIONS`` (the oldest first) are deleted with their records.

Where: three tables of their own (``record_sessions``, ``record_batches``,
``record_compilations``, with ``record_meta`` holding their schema version) inside the
environment's own database file, written through a connection of this module's, so that records
travel, are cleared and are set aside together with the environment they describe. A write that
fails is logged once per environment and the run goes on: records never fail a compilation.
Records go nowhere while the environment is memory (the compilation cache off, or a file that
cannot be written): nothing lasting changed that they could describe.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sqlite3
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cubejit import config
from cubejit.compile.recording import (
    BatchRecord,
    BatchTotals,
    CompilationRecording,
    add_record_sink,
)
from cubejit.environment.build import version
from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.sqlite_file import READ_ONLY_PLACE_CODES

KINDS = ("sessions", "batches", "compilations")
"""What :func:`read` reads."""

PENDING_LIMIT = 1 << 20
"""Bytes of records a session keeps in memory before it is written; the oldest go first."""

SCHEMA_VERSION = 1
_BUSY_TIMEOUT_S = 10.0
_PHASES = ("lower", "finalize", "load")
_log = logging.getLogger("cubejit.records")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS record_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS record_sessions ("
    " id TEXT PRIMARY KEY, started_at REAL NOT NULL, version TEXT NOT NULL, label TEXT,"
    " pid INTEGER NOT NULL, os TEXT NOT NULL, arch TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS record_batches ("
    " session TEXT NOT NULL, stamp INTEGER NOT NULL, started_at REAL NOT NULL,"
    " wall_s REAL NOT NULL, kernels_asked INTEGER NOT NULL, compiled INTEGER NOT NULL,"
    " from_store INTEGER NOT NULL, rekeyed INTEGER NOT NULL, failed INTEGER NOT NULL,"
    " threads INTEGER NOT NULL, PRIMARY KEY (session, stamp))",
    "CREATE TABLE IF NOT EXISTS record_compilations ("
    " session TEXT NOT NULL, stamp INTEGER NOT NULL, batch INTEGER NOT NULL,"
    " kernel TEXT NOT NULL, name TEXT NOT NULL, artifact TEXT NOT NULL, variant TEXT NOT NULL,"
    " outcome TEXT NOT NULL, work_s REAL NOT NULL, phases TEXT NOT NULL, source_hash TEXT,"
    " ir TEXT, source TEXT, PRIMARY KEY (session, stamp))",
    "CREATE INDEX IF NOT EXISTS record_compilations_by_name ON record_compilations (name)",
)
_READ_KIND = "SELECT value FROM meta WHERE name = 'kind'"
_READ_VERSION = "SELECT value FROM record_meta WHERE key = 'schema_version'"
_WRITE_VERSION = "INSERT OR IGNORE INTO record_meta (key, value) VALUES ('schema_version', ?)"
_INSERT_SESSION = (
    "INSERT OR IGNORE INTO record_sessions (id, started_at, version, label, pid, os, arch)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE_LABEL = "UPDATE record_sessions SET label = ? WHERE id = ?"
_INSERT_BATCH = (
    "INSERT OR IGNORE INTO record_batches (session, stamp, started_at, wall_s, kernels_asked,"
    " compiled, from_store, rekeyed, failed, threads) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_COMPILATION = (
    "INSERT OR IGNORE INTO record_compilations (session, stamp, batch, kernel, name, artifact,"
    " variant, outcome, work_s, phases, source_hash, ir, source)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_STALE_SESSIONS = (
    "SELECT id FROM record_sessions ORDER BY started_at DESC, id DESC LIMIT -1 OFFSET ?"
)
_DELETE = {
    table: f"DELETE FROM {table} WHERE {column} = ?"
    for table, column in (
        ("record_compilations", "session"),
        ("record_batches", "session"),
        ("record_sessions", "id"),
    )
}
_SELECT = {
    "sessions": "SELECT id, started_at, version, label, pid, os, arch FROM record_sessions"
    " ORDER BY started_at, id",
    "batches": "SELECT b.session, b.stamp, b.started_at, b.wall_s, b.kernels_asked, b.compiled,"
    " b.from_store, b.rekeyed, b.failed, b.threads FROM record_batches b"
    " JOIN record_sessions s ON s.id = b.session ORDER BY s.started_at, s.id, b.stamp",
    "compilations": "SELECT c.session, c.stamp, c.batch, c.kernel, c.name, c.artifact,"
    " c.variant, c.outcome, c.work_s, c.phases, c.source_hash, c.ir, c.source"
    " FROM record_compilations c JOIN record_sessions s ON s.id = c.session"
    " ORDER BY s.started_at, s.id, c.stamp",
}


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One process's use of one environment."""

    id: str
    started_at: float
    """Wall-clock time (``time.time()``) the session began."""
    version: str
    """The cubejit version the process ran."""
    label: str | None
    pid: int
    os: str
    arch: str


@dataclass(frozen=True, slots=True)
class StoredBatch(BatchTotals):
    """One batch of a session, as written: its totals, stamped."""

    session: str
    stamp: int
    """Order within the session, shared with its compilation records (which come first)."""


@dataclass(frozen=True, slots=True)
class StoredCompilation:
    """One kernel trip of a session, as written."""

    session: str
    stamp: int
    batch: int
    """The stamp of the batch it was part of."""
    kernel: str
    """The kernel id as ``str(KernelId)`` prints it."""
    name: str
    """The kernel's qualified name."""
    artifact: str
    """The artifact id's stable hash: the same kernel and variant in every process."""
    variant: str
    outcome: str
    """``compiled``, ``loaded`` or ``rekeyed``."""
    work_s: float
    phases: dict[str, dict[str, Any]]
    """``lower`` / ``finalize`` / ``load`` -> ``{"thread", "start", "end"}`` (seconds since
    the batch started), for the phases the trip went through."""
    source_hash: str | None
    ir: str | None
    source: str | None


@dataclass(slots=True)
class _Session:
    """This process's session in one environment, and what it holds back until written."""

    id: str
    started_at: float
    written: bool = False
    failed: bool = False
    stamp: int = 0
    pending: deque[tuple[BatchRecord, bool, int, int]] = field(default_factory=deque)
    """Batches held back: each record, whether its text is kept, the first of its stamps and
    its size in bytes. Rows are made of them only when the session is written, so a batch that
    changed nothing costs no more than keeping its record."""
    pending_bytes: int = 0


def _phases(recording: CompilationRecording) -> dict[str, dict[str, Any]]:
    return {
        name: phase.as_dict() for name in _PHASES if (phase := getattr(recording, name)) is not None
    }


def _rows(
    session: str, batch: BatchRecord, keep_text: bool, first_stamp: int
) -> list[tuple[str, tuple[Any, ...]]]:
    """The rows of ``batch``: its compilations stamped from ``first_stamp`` on, then itself."""
    batch_stamp = first_stamp + len(batch.kernels)
    rows: list[tuple[str, tuple[Any, ...]]] = [
        (
            _INSERT_COMPILATION,
            (
                session,
                stamp,
                batch_stamp,
                kernel.kernel,
                kernel.name,
                kernel.artifact,
                kernel.variant,
                kernel.outcome or "",
                kernel.work_s,
                json.dumps(_phases(kernel), sort_keys=True),
                kernel.source_hash,
                kernel.ir if keep_text else None,
                kernel.source_text if keep_text else None,
            ),
        )
        for stamp, kernel in enumerate(batch.kernels, first_stamp)
    ]
    rows.append((_INSERT_BATCH, (session, batch_stamp, *batch.totals())))
    return rows


def _batch_size(batch: BatchRecord, keep_text: bool) -> int:
    """About the bytes the rows of ``batch`` take."""
    size = 128
    for kernel in batch.kernels:
        size += 256 + len(kernel.kernel) + len(kernel.name) + len(kernel.variant)
        if keep_text:
            size += len(kernel.ir or "") + len(kernel.source_text or "")
    return size


@contextmanager
def _connection(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to the environment database at ``path`` for one transaction: committed
    when the block ends, rolled back when it raises, closed either way. Never creates the file:
    the store does, and records go only into a database the store made for an environment."""
    uri = f"{path.resolve().as_uri()}?mode=rw"
    with closing(
        sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
    ) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")


def _ensure_schema(db: sqlite3.Connection) -> None:
    kind = db.execute(_READ_KIND).fetchone()
    if kind is None or kind[0] != "environment":
        raise sqlite3.DatabaseError("it is not a cubejit environment (a bundle, or no store)")
    for statement in _SCHEMA:
        db.execute(statement)
    db.execute(_WRITE_VERSION, (str(SCHEMA_VERSION),))
    (version,) = db.execute(_READ_VERSION).fetchone()
    if version != str(SCHEMA_VERSION):
        raise sqlite3.DatabaseError(
            f"its records have schema version {version}; this cubejit writes {SCHEMA_VERSION}"
        )


def active_database() -> Path | None:
    """The database file of the active environment, or ``None`` when it is memory (the
    compilation cache is off, or its file could not be written) or has no file yet: records
    never create an environment."""
    if not config.settings().compilation_cache:
        return None
    try:
        if not ENVIRONMENTS.path().is_file():
            return None
    except OSError:
        return None
    _, storage = ENVIRONMENTS.current()
    path = getattr(storage, "path", None)
    return Path(path) if storage.persists and path is not None else None


class RecordKeeper:
    """Turns the loader's batch records into sessions, batches and compilations in the
    database ``where()`` names at the end of each batch (``None``: keep nothing).

    One per process is installed as a record sink (:func:`install`); tests make their own.
    Safe to call from several threads at once.
    """

    def __init__(self, where: Callable[[], Path | None] = active_database) -> None:
        self._where = where
        self._lock = threading.Lock()
        self._sessions: dict[Path, _Session] = {}
        self._label: str | None = None

    def session(self, path: Path) -> _Session:
        """This process's session in the environment at ``path`` (made on first use)."""
        with self._lock:
            return self._session(path)

    def label(self, name: str | None) -> None:
        """Names this process's sessions, those written already and those to come."""
        with self._lock:
            self._label = name
            for path, session in self._sessions.items():
                if session.written and not session.failed:
                    self._write(path, session, [(_UPDATE_LABEL, (name, session.id))])

    def __call__(self, batch: BatchRecord) -> None:
        """The record sink: files ``batch`` under the active environment's session."""
        settings = config.settings()
        if settings.record_level == "off":
            return
        path = self._where()
        if path is None:
            return
        keep_text = settings.record_level == "full"
        with self._lock:
            session = self._session(path)
            first_stamp = session.stamp + 1
            session.stamp += len(batch.kernels) + 1
            if session.written:
                self._write(path, session, _rows(session.id, batch, keep_text, first_stamp))
                return
            self._hold(session, batch, keep_text, first_stamp)
            if batch.compiled or batch.rekeyed:
                self._write_session(path, session, settings.keep_sessions)

    def _session(self, path: Path) -> _Session:
        session = self._sessions.get(path)
        if session is None:
            session = _Session(id=uuid.uuid4().hex[:16], started_at=time.time())
            self._sessions[path] = session
        return session

    def _hold(self, session: _Session, batch: BatchRecord, keep_text: bool, stamp: int) -> None:
        size = _batch_size(batch, keep_text)
        session.pending.append((batch, keep_text, stamp, size))
        session.pending_bytes += size
        while session.pending_bytes > PENDING_LIMIT and session.pending:
            session.pending_bytes -= session.pending.popleft()[3]

    def _write_session(self, path: Path, session: _Session, keep: int | None) -> None:
        rows: list[tuple[str, tuple[Any, ...]]] = [
            (
                _INSERT_SESSION,
                (
                    session.id,
                    session.started_at,
                    version(),
                    self._label,
                    os.getpid(),
                    platform.system(),
                    platform.machine(),
                ),
            )
        ]
        for batch, keep_text, stamp, _ in session.pending:
            rows += _rows(session.id, batch, keep_text, stamp)
        session.pending.clear()
        session.pending_bytes = 0
        session.written = self._write(path, session, rows, keep=keep)

    def _write(
        self,
        path: Path,
        session: _Session,
        rows: list[tuple[str, tuple[Any, ...]]],
        keep: int | None = None,
    ) -> bool:
        if session.failed:
            return False
        try:
            with _connection(path) as db:
                _ensure_schema(db)
                for statement, values in rows:
                    db.execute(statement, values)
                if keep is not None:
                    _prune(db, keep)
        except (sqlite3.Error, OSError) as e:
            session.failed = True
            _log.warning(
                "cannot write compilation records to %s, so this process keeps none there: %s",
                path,
                e,
            )
            return False
        return True


def _prune(db: sqlite3.Connection, keep: int) -> None:
    stale = [row[0] for row in db.execute(_STALE_SESSIONS, (keep,)).fetchall()]
    for session in stale:
        for statement in _DELETE.values():
            db.execute(statement, (session,))


def read(kind: str, path: Path | None = None) -> list[Any]:
    """The ``kind`` records (one of :data:`KINDS`) the environment at ``path`` (default: the
    active one) holds, in stamp order: sessions by start, then each session's records in the
    order they happened. Records held in memory, not yet written, are not among them."""
    if kind not in KINDS:
        raise ValueError(f"records are one of {', '.join(KINDS)}, not {kind!r}")
    if path is None:
        path = active_database()
        if path is None:
            return []
    if not Path(path).is_file():
        return []
    try:
        rows = _read_rows(Path(path), kind)
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return []
        raise
    if kind == "sessions":
        return [SessionRecord(*row) for row in rows]
    if kind == "batches":
        return [StoredBatch(*row[2:], session=row[0], stamp=row[1]) for row in rows]
    return [StoredCompilation(*row[:9], json.loads(row[9]), *row[10:]) for row in rows]


def _read_rows(path: Path, kind: str) -> list[Any]:
    """The rows of one kind of records, read-only; from a database whose ``-shm`` file cannot
    be made (a read-only mount, a directory this user may not write) as immutable."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    for options in ("", "&immutable=1"):
        try:
            with closing(sqlite3.connect(uri + options, uri=True, timeout=_BUSY_TIMEOUT_S)) as db:
                return db.execute(_SELECT[kind]).fetchall()
        except sqlite3.OperationalError as e:
            if options or e.sqlite_errorcode not in READ_ONLY_PLACE_CODES:
                raise
    return []


_keeper: RecordKeeper | None = None
_install_lock = threading.Lock()


def install() -> RecordKeeper:
    """The process's keeper, made and added as a record sink on first call."""
    global _keeper
    with _install_lock:
        if _keeper is None:
            _keeper = RecordKeeper()
            add_record_sink(_keeper)
        return _keeper


def label(name: str | None) -> None:
    """Names this process's session (``"serve"``, ``"warm"``) in the records."""
    install().label(name)
