"""The active environment of this process: which database file, opened once, and its
generation.

An environment is ``<root>/<name>.db``: the root is :func:`set_root`'s, else the settings'
``cache_dir`` (``CUBEJIT_CACHE_DIR``, else the user cache directory); the name is
:func:`activate`'s, else the settings' ``env`` (``CUBEJIT_ENV``, else ``default``). :func:`load`
mounts any cubejit database or bundle file instead. With ``CUBEJIT_COMPILATION_CACHE`` off, the
environment is this process's memory.

Every switch (``activate``, ``set_root``, ``load``, or settings that now name another file)
bumps :func:`generation`: whoever keeps what it read from the store (a backend's loaded
kernels, a :class:`~cubejit.environment.store.Store`'s memory) drops it when that number
changes. A database is opened once per process and its connection shared by every thread.

A database that cannot be opened or written (a read-only root, a directory this user may not
write, a full disk, an I/O error) is replaced, for the rest of the process, by memory, with one
WARNING: the run goes on, and the cost is compiling again next time. What such a database
already holds is still served when it can be read (read-only).

Some files are not used at all, with one WARNING, and the process runs from memory: a root or
database that is not trusted (owned by another user, writable by group or others, a symbolic
link: see :mod:`cubejit.trust`), whose code is never loaded; and a database written by a newer
cubejit, which is left unchanged for it. A root on a network filesystem
(:mod:`~cubejit.environment.filesystem`) keeps a rollback journal instead of a WAL, with one
WARNING. These checks run once, when a database is opened.

A file :func:`load` serves (a bundle, or another machine's environment) is opened read-only and
never written: its signatures are checked whatever its ``meta`` table claims it is (see
:mod:`~cubejit.environment.bundle`), and kernels compiled meanwhile go to the local environment
(the one :func:`activate` or the settings name) in front of it.
"""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections.abc import Callable
from pathlib import Path

from cubejit import config, trust
from cubejit.environment import filesystem
from cubejit.environment.sqlite_file import COMPANIONS, NewerSchemaError
from cubejit.environment.storage import NamespaceSummary, Storage
from cubejit.environment.storage_layered import LayeredStorage, ReadLayer
from cubejit.environment.storage_memory import MemoryStorage
from cubejit.environment.storage_sqlite import SqliteStorage
from cubejit.errors import StoreError

log = logging.getLogger("cubejit.environment")

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_MAX_NAME = 128
_MEMORY = Path("<memory>")


def sanitise(name: str) -> str:
    """``name`` as a file name that stays inside the root: characters other than letters,
    digits, ``.``, ``_`` and ``-`` become ``_``, and so does a leading dot (no ``..``, no
    hidden file). Raises :class:`ValueError` for an empty name."""
    if not name:
        raise ValueError("an environment name must not be empty")
    safe = _UNSAFE.sub("_", name)[:_MAX_NAME]
    return "_" + safe[1:] if safe.startswith(".") else safe


class Environments:
    """This process's environments: the active one, every database opened so far (one
    connection each), and the generation. Thread-safe."""

    def __init__(self) -> None:
        self.filesystem_type: Callable[[Path], int | None] = filesystem.filesystem_type
        """The seam that says which filesystem holds a path (its ``statfs`` magic)."""
        self._lock = threading.RLock()
        self._watchers: list[weakref.WeakMethod[Callable[[], None]]] = []
        self._generation = -1
        self._forget()

    def _forget(self) -> None:
        self._name: str | None = None
        self._root: Path | None = None
        self._settings_root: tuple[config.Settings, Path] | None = None
        self._file: Path | None = None
        self._bump()
        self._bound: Path | None = None
        self._opened: dict[Path, Storage] = {}
        self._loaded: dict[Path, ReadLayer] = {}
        self._degraded: set[Path] = set()
        self._reasons: dict[Path, str] = {}
        self._settings_seen: config.Settings | None = None
        self._wanted = _MEMORY

    def activate(self, name: str) -> None:
        with self._lock:
            self._name = sanitise(name)
            self._file = None
            self._switched()

    def active(self) -> str:
        with self._lock:
            if self._file is not None:
                return self._file.stem
            return self._name or sanitise(config.settings().env)

    def set_root(self, path: str | Path) -> None:
        with self._lock:
            self._root = Path(path).expanduser().resolve()
            self._file = None
            self._switched()

    def root(self) -> Path:
        with self._lock:
            if self._root is not None:
                return self._root
            settings = config.settings()
            known = self._settings_root
            if known is not None and known[0] is settings:
                return known[1]
            given = settings.cache_dir.expanduser()
            root = given.resolve()
            if given.is_absolute():
                # Resolved once per settings (a relative one follows the working directory):
                # every batch's records ask for it.
                self._settings_root = (settings, root)
            return root

    def load(
        self, file: str | Path, serve: Callable[[SqliteStorage], ReadLayer] | None = None
    ) -> None:
        """Makes ``file`` the active environment, opened read-only behind the local one;
        ``serve`` wraps the storage opened for it (a bundle's signature checks)."""
        path = Path(file).expanduser().resolve()
        if not path.is_file():
            raise StoreError(f"cannot load {path}: no such file")
        with self._lock:
            local = self._local()
            if path != local:
                behind = self._loaded.get(path)
                if behind is None:
                    opened = SqliteStorage.open(path, readonly=True, repair=False)
                    behind = self._loaded[path] = opened if serve is None else serve(opened)
                front = self._opened.get(local)
                if front is None:
                    front = self._opened[local] = self._open(local)
                self._opened[path] = LayeredStorage(front, behind)
            self._file = path
            self._switched()

    def path(self) -> Path:
        with self._lock:
            if self._file is not None:
                return self._file
            return self.root() / f"{self.active()}.db"

    def local_path(self) -> Path:
        """The database of the environment :func:`activate` or the settings name, where
        kernels are kept even while a loaded file is active."""
        with self._lock:
            return self.root() / f"{self._name or sanitise(config.settings().env)}.db"

    def network_filesystem(self) -> str | None:
        """The network filesystem holding the root, if it is on one."""
        return filesystem.network_filesystem(self.filesystem_type(self.root()))

    def _local(self) -> Path:
        return self.local_path() if config.settings().compilation_cache else _MEMORY

    def generation(self) -> int:
        # Read on every launch: while nothing changed, answer without taking the lock.
        if self._bound is not None and config.settings() is self._settings_seen:
            return self._generation
        with self._lock:
            self._current()
            return self._generation

    def names(self) -> list[str]:
        root = self.root()
        if not root.is_dir():
            return []
        return sorted(p.stem for p in root.glob("*.db") if p.is_file())

    def namespaces(self) -> list[NamespaceSummary]:
        return self.current()[1].summaries()

    def current(self) -> tuple[int, Storage]:
        """The generation and storage of the active environment, opening it on first use."""
        with self._lock:
            return self._generation, self._current()

    def degrade(self, storage: Storage, reason: str) -> Storage:
        """Replaces ``storage``, whose writes fail, by memory (reading on from it) for the
        rest of the process, with one WARNING; the storage to use instead."""
        with self._lock:
            for path, opened in self._opened.items():
                if opened is storage:
                    self._opened[path] = MemoryStorage(reads_from=storage)
                    self._warn(path, reason)
                    return self._opened[path]
            return self._current()

    def unwritable(self) -> str | None:
        """Why the active environment's file is not written by this process (read-only here,
        not trusted, of a newer schema, …), or ``None`` when it is, or when it is memory by
        choice (the compilation cache off)."""
        with self._lock:
            storage = self._current()
            if storage.persists or self._wanted == _MEMORY:
                return None
            where = self._wanted if self._file is None else self.local_path()
            return self._reasons.get(where, "it cannot be written here")

    def reset(self) -> None:
        """Closes every database and forgets every choice, as in a new process."""
        with self._lock:
            for storage in self._opened.values():
                storage.close()
            self._forget()

    def watch(self, callback: Callable[[], None]) -> None:
        """Calls the bound method ``callback`` whenever the generation changes, for as long as
        its object lives: for caches on a launch's path, which cannot afford to read the
        generation at every launch. A switch through the settings is seen (and told) at the
        next use of the store."""
        with self._lock:
            self._watchers.append(weakref.WeakMethod(callback))  # type: ignore[arg-type]

    def _bump(self) -> None:
        """A new generation, monotonic even across a reset (loaders compare it with what they
        saw before), told to every watcher still alive."""
        self._generation += 1
        alive = [w for w in self._watchers if w() is not None]
        self._watchers = alive
        for watcher in alive:
            callback = watcher()
            if callback is not None:
                callback()

    def _switched(self) -> None:
        self._bump()
        self._bound = None
        self._settings_seen = None

    def _current(self) -> Storage:
        settings = config.settings()
        if settings is not self._settings_seen:
            self._settings_seen = settings
            self._wanted = self.path() if settings.compilation_cache else _MEMORY
        wanted = self._wanted
        if wanted != self._bound:
            if self._bound is not None:
                self._bump()
            self._bound = wanted
        storage = self._opened.get(wanted)
        if storage is None:
            storage = self._open(wanted)
            self._opened[wanted] = storage
        return storage

    def _open(self, path: Path) -> Storage:
        if path == _MEMORY:
            return MemoryStorage()
        refused = self._refusal(path)
        if refused is not None:
            self._once(path, refused)
            return MemoryStorage()
        network = filesystem.network_filesystem(self.filesystem_type(path.parent))
        if network is not None:
            self._once(
                path,
                f"cubejit: the compilation store {path} is on {network}, where SQLite's WAL "
                "is not safe (no shared memory between hosts); it keeps a rollback journal "
                "instead, slower when many processes write: set CUBEJIT_CACHE_DIR to a "
                "node-local directory for speed",
            )
        try:
            return SqliteStorage.open(path, wal=network is None)
        except NewerSchemaError as e:
            self._once(
                path,
                f"cubejit: {e}; compiled kernels are kept in memory for the rest of this run "
                "(use that cubejit, or another environment, to keep them)",
            )
            return MemoryStorage()
        except StoreError as e:
            reason = str(e)
        try:
            readable = SqliteStorage.open(path, readonly=True, repair=False)
        except StoreError:
            self._warn(path, reason)
            return MemoryStorage()
        self._warn(path, f"{reason}; what it holds is served read-only")
        return MemoryStorage(reads_from=readable)

    def _refusal(self, path: Path) -> str | None:
        """Why the root holding ``path``, ``path`` or its WAL files are not trusted (see
        :mod:`cubejit.trust`), as the WARNING to give; ``None`` when they are."""
        for file in (path.parent, path, *(path.with_name(path.name + s) for s in COMPANIONS)):
            reason = trust.refusal(file)
            if reason is not None:
                return (
                    f"cubejit: the compilation store {path} is not trusted: {file}: {reason}; "
                    "its kernels are never loaded, and compiled kernels are kept in memory for "
                    "the rest of this run (make the root yours and private, e.g. chmod 700, "
                    "or set CUBEJIT_CACHE_DIR to a directory of your own)"
                )
        return None

    def _once(self, path: Path, message: str) -> None:
        """Logs ``message`` at WARNING, the first time anything is said about ``path``."""
        self._reasons.setdefault(path, message)
        if path in self._degraded:
            return
        self._degraded.add(path)
        log.warning("%s", message)

    def _warn(self, path: Path, reason: str) -> None:
        self._reasons.setdefault(path, reason)
        if path in self._degraded:
            return
        self._degraded.add(path)
        log.warning(
            "cubejit: cannot write the compilation store %s (%s); compiled kernels are "
            "kept in memory for the rest of this run and compile again next time",
            path,
            reason,
        )


ENVIRONMENTS = Environments()
"""The environments of this process."""
