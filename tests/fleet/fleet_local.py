"""A host's local environment for the fleet tests: the Store API over memory."""

from __future__ import annotations

from collections.abc import Iterator

from cubejit.environment.storage import LOCAL, InsertOutcome
from cubejit.environment.storage_memory import MemoryStorage

NS = "cpu/0.1.0/x86_64-test"


class LocalMemory:
    """A host's local environment, as the Store API over memory."""

    def __init__(self) -> None:
        self.namespace = NS
        self.lazy = True
        self._storage = MemoryStorage()

    def storage(self) -> MemoryStorage:
        return self._storage

    def get(self, key: bytes) -> bytes | None:
        return self._storage.get(NS, key)

    def insert(self, key: bytes, value: bytes, origin: str = LOCAL) -> InsertOutcome:
        return self._storage.insert(NS, key, value, origin)

    def remove(self, key: bytes) -> None:
        self._storage.remove(NS, key)

    def purge_key(self, key: bytes) -> None:
        self._storage.purge_key(NS, key)

    def purge(self) -> None:
        self._storage.purge(NS)

    def scan(self) -> Iterator[tuple[bytes, bytes]]:
        return self._storage.scan(NS)
