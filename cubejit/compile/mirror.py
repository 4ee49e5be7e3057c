"""What a process keeps of the store while the store stays the same: CubeCL's mirroring cache.

A :class:`Mirror` is a map whose values were made from what one store held (loaded kernels,
launch functions built on them). It reads its source's generation on every look-up and empties
itself when that changed (an environment switch), so nothing loaded from one store is served
once another is active; a persisting target's loader and the CUDA client's launch functions
are both mirrors of one target, and no other place watches for switches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
T = TypeVar("T")


class Mirror(Generic[K, T]):
    """Values by key, valid while ``generation()`` returns what it returned when they were
    kept. ``generation`` is read on every :meth:`get`: it must be cheap (an attribute read when
    nothing changed). Used from one thread, the one owning the device."""

    __slots__ = ("_generation", "_generation_of", "_items")

    def __init__(self, generation: Callable[[], int]) -> None:
        self._generation_of = generation
        self._generation = generation()
        self._items: dict[K, T] = {}

    def get(self, key: K) -> T | None:
        """The value kept under ``key`` in this generation, or ``None``."""
        if self._generation_of() != self._generation:
            self.clear()
        return self._items.get(key)

    def follow(self) -> None:
        """Empties the mirror if the generation changed since it was bound."""
        if self._generation_of() != self._generation:
            self.clear()

    def put(self, key: K, value: T) -> None:
        """Keeps ``value`` under ``key``. One made during a switch is kept too: the next
        :meth:`get` sees the new generation and drops it with the rest."""
        self._items[key] = value

    def clear(self) -> None:
        """Drops every value and binds the mirror to the generation of now."""
        self._items = {}
        self._generation = self._generation_of()
