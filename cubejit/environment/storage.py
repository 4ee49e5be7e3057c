"""The seam between a :class:`~cubejit.environment.store.Store` and where its entries live.

A storage holds ``(namespace, key) -> value`` entries, bytes all three, with the rules every
storage keeps the same way (SQLite, memory, and any shared store behind them):

- Insert-only, first writer wins: a second value under a key is refused, the first stays.
- Every entry remembers its origin, ``local`` (written by this machine) or ``bundle`` (imported
  from elsewhere). A local value replaces a bundle one; a bundle value never replaces anything.
- A write that cannot be done is an outcome (:attr:`InsertOutcome.FAILED`), never an exception:
  the storage's ``last_failure`` says why, and the caller falls back to memory.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Protocol

LOCAL = "local"
"""Origin of an entry this machine wrote."""
BUNDLE = "bundle"
"""Origin of an entry imported from a bundle."""


class InsertOutcome(enum.Enum):
    """What an insert did."""

    STORED = "stored"
    """The value is now the entry (new, or a local value replacing a bundle one)."""
    ALREADY_PRESENT = "already present"
    """The same value was there already; nothing changed but, at most, its origin to local."""
    REFUSED = "refused"
    """Another value is there and stays: the first writer wins."""
    FAILED = "failed"
    """The storage could not be written (disk full, I/O error, read-only); nothing changed."""


@dataclass(frozen=True, slots=True)
class NamespaceSummary:
    """One namespace of an environment and what it holds."""

    namespace: str
    """``"<backend>/<cubejit version>/<fingerprint>"`` for artifacts."""
    entries: int
    """How many entries."""
    bytes: int
    """Their values' total size."""


def accepts(existing: bytes, existing_origin: str, value: bytes, origin: str) -> InsertOutcome:
    """The outcome of inserting ``value`` from ``origin`` over an entry that holds ``existing``
    from ``existing_origin``: the one rule every storage applies inside its check-and-write."""
    if existing == value:
        return InsertOutcome.ALREADY_PRESENT
    if existing_origin == BUNDLE and origin == LOCAL:
        return InsertOutcome.STORED
    return InsertOutcome.REFUSED


def merged_summaries(*layers: list[NamespaceSummary]) -> list[NamespaceSummary]:
    """The namespaces of storages read as one (a memory in front of a file, a local
    environment in front of a bundle), sorted by name; an entry held by two layers counts in
    each."""
    merged: dict[str, tuple[int, int]] = {}
    for layer in layers:
        for summary in layer:
            entries, size = merged.get(summary.namespace, (0, 0))
            merged[summary.namespace] = (entries + summary.entries, size + summary.bytes)
    return [NamespaceSummary(ns, entries, size) for ns, (entries, size) in sorted(merged.items())]


class Storage(Protocol):
    """Where entries live. Every method is safe to call from several threads at once."""

    persists: bool
    """Whether entries outlive the process."""
    last_failure: str | None
    """Why the last :attr:`InsertOutcome.FAILED` insert failed."""

    def get(self, namespace: str, key: bytes) -> bytes | None:
        """The value under ``key``, or ``None``; a storage that cannot be read answers None."""
        ...

    def insert(
        self, namespace: str, key: bytes, value: bytes, origin: str = LOCAL
    ) -> InsertOutcome:
        """Checks what is under ``key`` and writes ``value`` when the rules allow, as one
        atomic step against every other writer, in this process or another."""
        ...

    def get_many(self, namespace: str, keys: Collection[bytes]) -> dict[bytes, bytes]:
        """The values under those of ``keys`` that hold one, read together (one query where
        the storage has queries): what a batch of kernels asks the store at once."""
        ...

    def purge_key(self, namespace: str, key: bytes) -> None:
        """Deletes the entry under ``key``, if any."""
        ...

    def purge(self, namespace: str) -> None:
        """Deletes every entry of ``namespace``."""
        ...

    def scan(self, namespace: str) -> Iterator[tuple[bytes, bytes]]:
        """Every ``(key, value)`` of ``namespace``, in key order."""
        ...

    def summaries(self) -> list[NamespaceSummary]:
        """Every namespace that holds entries, sorted by name."""
        ...

    def close(self) -> None:
        """Releases files and connections; the storage is not used again."""
        ...
