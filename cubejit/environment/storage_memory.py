"""A storage in this process's memory: what ``CUBEJIT_COMPILATION_CACHE=0`` selects, and what
an environment falls back to when its database cannot be written."""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterator

from cubejit.environment.storage import (
    LOCAL,
    InsertOutcome,
    NamespaceSummary,
    Storage,
    accepts,
    merged_summaries,
)


class MemoryStorage:
    """Entries in a dict, with the rules of every storage. Gone when the process ends.

    ``reads_from`` is a storage that still answers reads after its writes started failing (a
    full disk, a database turned read-only): entries it holds keep being served, and what is
    new lives here.
    """

    persists = False

    def __init__(self, reads_from: Storage | None = None) -> None:
        self._entries: dict[str, dict[bytes, tuple[bytes, str]]] = {}
        self._lock = threading.Lock()
        self._reads_from = reads_from
        self.last_failure: str | None = None

    def get(self, namespace: str, key: bytes) -> bytes | None:
        with self._lock:
            entry = self._entries.get(namespace, {}).get(key)
        if entry is not None:
            return entry[0]
        return None if self._reads_from is None else self._reads_from.get(namespace, key)

    def insert(
        self, namespace: str, key: bytes, value: bytes, origin: str = LOCAL
    ) -> InsertOutcome:
        with self._lock:
            entries = self._entries.setdefault(namespace, {})
            existing = entries.get(key)
            if existing is None and self._reads_from is not None:
                behind = self._reads_from.get(namespace, key)
                existing = None if behind is None else (behind, LOCAL)
            if existing is None:
                entries[key] = (value, origin)
                return InsertOutcome.STORED
            outcome = accepts(existing[0], existing[1], value, origin)
            if outcome is InsertOutcome.STORED or (
                outcome is InsertOutcome.ALREADY_PRESENT and origin == LOCAL
            ):
                entries[key] = (value, origin)
            return outcome

    def get_many(self, namespace: str, keys: Collection[bytes]) -> dict[bytes, bytes]:
        with self._lock:
            entries = self._entries.get(namespace, {})
            found = {key: entries[key][0] for key in keys if key in entries}
        if self._reads_from is not None and len(found) < len(keys):
            missing = [key for key in keys if key not in found]
            found.update(self._reads_from.get_many(namespace, missing))
        return found

    def purge_key(self, namespace: str, key: bytes) -> None:
        with self._lock:
            self._entries.get(namespace, {}).pop(key, None)
        if self._reads_from is not None:
            self._reads_from.purge_key(namespace, key)

    def purge(self, namespace: str) -> None:
        with self._lock:
            self._entries.pop(namespace, None)
        if self._reads_from is not None:
            self._reads_from.purge(namespace)

    def scan(self, namespace: str) -> Iterator[tuple[bytes, bytes]]:
        behind = {} if self._reads_from is None else dict(self._reads_from.scan(namespace))
        with self._lock:
            behind.update(
                (key, value) for key, (value, _) in self._entries.get(namespace, {}).items()
            )
        yield from sorted(behind.items())

    def summaries(self) -> list[NamespaceSummary]:
        """The namespaces held here and in the storage read from, so that tools see what a
        read-only environment really holds."""
        with self._lock:
            own = [
                NamespaceSummary(name, len(entries), sum(len(v) for v, _ in entries.values()))
                for name, entries in sorted(self._entries.items())
                if entries
            ]
        return (
            own if self._reads_from is None else merged_summaries(self._reads_from.summaries(), own)
        )

    def close(self) -> None:
        if self._reads_from is not None:
            self._reads_from.close()
