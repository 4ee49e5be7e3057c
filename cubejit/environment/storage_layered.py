"""A local storage in front of a bundle served in place.

:func:`~cubejit.environment.load` serves a bundle without ever writing into it: the file may be
shared, signed, or on media nothing may write, and what it holds is someone else's. Reads look
in the local storage first, then in the bundle; every write, and every deletion, goes to the
local storage, so kernels compiled while the bundle is active are kept by this machine's own
environment and the bundle stays byte for byte as it came.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Protocol

from cubejit.environment.storage import (
    LOCAL,
    InsertOutcome,
    NamespaceSummary,
    Storage,
    merged_summaries,
)


class ReadLayer(Protocol):
    """What a layer behind is ever asked: reads, so that nothing can write a bundle, and a
    signature-checking wrapper has every read to check (and no other door)."""

    def get(self, namespace: str, key: bytes) -> bytes | None: ...

    def scan(self, namespace: str) -> Iterator[tuple[bytes, bytes]]: ...

    def summaries(self) -> list[NamespaceSummary]: ...

    def close(self) -> None: ...


class LayeredStorage:
    """``front`` (written) in front of ``behind`` (only read). Thread-safe as its layers."""

    def __init__(self, front: Storage, behind: ReadLayer) -> None:
        self.front = front
        """Where writes go: the local environment (or memory)."""
        self.behind = behind
        """The bundle served in place, never written."""

    @property
    def persists(self) -> bool:
        return self.front.persists

    @persists.setter
    def persists(self, value: bool) -> None:
        self.front.persists = value

    @property
    def last_failure(self) -> str | None:
        return self.front.last_failure

    @last_failure.setter
    def last_failure(self, value: str | None) -> None:
        self.front.last_failure = value

    @property
    def path(self) -> Path | None:
        """The local environment's file, where records of this process go; ``None`` when
        that is memory."""
        path = getattr(self.front, "path", None)
        return path if isinstance(path, Path) else None

    def get(self, namespace: str, key: bytes) -> bytes | None:
        value = self.front.get(namespace, key)
        return self.behind.get(namespace, key) if value is None else value

    def get_many(self, namespace: str, keys: Collection[bytes]) -> dict[bytes, bytes]:
        """The values under those of ``keys`` that either layer holds, the local one first:
        what a batch of kernels asks at once."""
        found = self.front.get_many(namespace, keys)
        for key in keys:
            if key not in found:
                value = self.behind.get(namespace, key)
                if value is not None:
                    found[key] = value
        return found

    def insert(
        self, namespace: str, key: bytes, value: bytes, origin: str = LOCAL
    ) -> InsertOutcome:
        return self.front.insert(namespace, key, value, origin)

    def purge_key(self, namespace: str, key: bytes) -> None:
        """Deletes the local entry; the bundle's, if any, stays (it is never written)."""
        self.front.purge_key(namespace, key)

    def purge(self, namespace: str) -> None:
        """Deletes the local entries; the bundle's stay (it is never written)."""
        self.front.purge(namespace)

    def scan(self, namespace: str) -> Iterator[tuple[bytes, bytes]]:
        """Both layers' entries in key order, the local value where both hold a key."""
        front = self.front.scan(namespace)
        behind = self.behind.scan(namespace)
        mine, theirs = next(front, None), next(behind, None)
        while mine is not None or theirs is not None:
            if mine is not None and (theirs is None or mine[0] <= theirs[0]):
                if theirs is not None and theirs[0] == mine[0]:
                    theirs = next(behind, None)
                yield mine
                mine = next(front, None)
            elif theirs is not None:
                yield theirs
                theirs = next(behind, None)

    def summaries(self) -> list[NamespaceSummary]:
        return merged_summaries(self.behind.summaries(), self.front.summaries())

    def close(self) -> None:
        self.front.close()
        self.behind.close()
