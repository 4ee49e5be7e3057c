"""A namespace of the active environment, as ``bytes -> bytes``.

A :class:`Store` follows the active environment: every call asks
:data:`~cubejit.environment.manager.ENVIRONMENTS` for the storage of the moment, so a switch is
seen at once and nothing read before it is served after. It keeps no memory of its own: what a
backend keeps loaded is its loader's business, and a second copy of every value here would only
double what a warm process holds. When a write fails, the environment falls back to memory for
the rest of the process (one WARNING) and the write is done there, so a caller's run goes on.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from cubejit.environment.manager import ENVIRONMENTS
from cubejit.environment.storage import LOCAL, InsertOutcome, Storage


class Store:
    """The entries of ``namespace`` in the active environment. Thread-safe."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        """The namespace, e.g. ``"cpu/0.1.0/x86_64-gcc12-O3-native"``."""

    def storage(self) -> Storage:
        """The active environment's storage."""
        return ENVIRONMENTS.current()[1]

    def get(self, key: bytes) -> bytes | None:
        """The value under ``key``; ``None`` if absent."""
        return self.storage().get(self.namespace, key)

    def get_many(self, keys: Collection[bytes]) -> dict[bytes, bytes]:
        """The values under those of ``keys`` that hold one, read together."""
        return self.storage().get_many(self.namespace, keys) if keys else {}

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
        return outcome

    def purge_key(self, key: bytes) -> None:
        """Deletes the entry under ``key`` from the environment."""
        self.storage().purge_key(self.namespace, key)

    def purge(self) -> None:
        """Deletes every entry of the namespace from the environment."""
        self.storage().purge(self.namespace)

    def scan(self) -> Iterator[tuple[bytes, bytes]]:
        """Every ``(key, value)`` the environment holds in the namespace, in key order."""
        return self.storage().scan(self.namespace)
