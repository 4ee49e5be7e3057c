"""A namespace of the active environment, as ``bytes -> bytes``, with a memory in front.

A :class:`Store` follows the active environment: after a switch (a new
:func:`~cubejit.environment.generation`) it forgets what it held in memory and reads the new
environment. When a write fails, the environment falls back to memory for the rest of the
process (one WARNING) and the write is done there, so a caller's run goes on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.storage import LOCAL, InsertOutcome, Storage


class Store:
    """The entries of ``namespace`` in the active environment.

    ``lazy`` (the default) reads an entry when it is first asked for; otherwise the whole
    namespace is read into memory at once, and again after each environment switch. Thread-safe.
    """

    def __init__(self, namespace: str, *, lazy: bool = True) -> None:
        self.namespace = namespace
        """The namespace, e.g. ``"cpu/0.1.0/x86_64-gcc12-O3-native"``."""
        self.lazy = lazy
        """Whether entries are read on demand rather than all at once."""
        self._lock = threading.Lock()
        self._memory: dict[bytes, bytes] = {}
        self._generation: int | None = None

    def storage(self) -> Storage:
        """The active environment's storage, this store's memory emptied if it changed."""
        generation, storage = ENVIRONMENTS.current()
        with self._lock:
            if generation != self._generation:
                self._memory.clear()
                self._generation = generation
                if not self.lazy:
                    self._memory.update(storage.scan(self.namespace))
        return storage

    def get(self, key: bytes) -> bytes | None:
        """The value under ``key``, from memory or else the environment; ``None`` if absent."""
        storage = self.storage()
        with self._lock:
            value = self._memory.get(key)
        if value is not None or not self.lazy:
            return value
        value = storage.get(self.namespace, key)
        if value is not None:
            with self._lock:
                self._memory[key] = value
        return value

    def insert(self, key: bytes, value: bytes, origin: str = LOCAL) -> InsertOutcome:
        """Writes ``value`` under ``key`` unless another value is there (the first writer
        wins; a local value replaces one imported from a bundle). A write the environment
        refuses falls back to memory, so the outcome is :attr:`InsertOutcome.FAILED` only if
        that fails too."""
        storage = self.storage()
        outcome = storage.insert(self.namespace, key, value, origin)
        if outcome is InsertOutcome.FAILED:
            storage = ENVIRONMENTS.degrade(storage, storage.last_failure or "write refused")
            outcome = storage.insert(self.namespace, key, value, origin)
        if outcome in (InsertOutcome.STORED, InsertOutcome.ALREADY_PRESENT):
            with self._lock:
                self._memory[key] = value
        return outcome

    def remove(self, key: bytes) -> None:
        """Drops the memory's copy of the entry; the environment keeps it."""
        storage = self.storage()
        with self._lock:
            self._memory.pop(key, None)
        storage.remove(self.namespace, key)

    def purge_key(self, key: bytes) -> None:
        """Deletes the entry under ``key`` from memory and from the environment."""
        storage = self.storage()
        with self._lock:
            self._memory.pop(key, None)
        storage.purge_key(self.namespace, key)

    def purge(self) -> None:
        """Deletes every entry of the namespace, from memory and from the environment."""
        storage = self.storage()
        with self._lock:
            self._memory.clear()
        storage.purge(self.namespace)

    def scan(self) -> Iterator[tuple[bytes, bytes]]:
        """Every ``(key, value)`` the environment holds in the namespace, in key order."""
        return self.storage().scan(self.namespace)
