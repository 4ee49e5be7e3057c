"""Tuning keys: what ``key(*args)`` may return, and :func:`anchor`, which buckets sizes.

A tuning key is a tuple of ints, floats, strings and bools (nested tuples too); numpy scalars,
dtypes, cubejit types and enum members are taken as their plain values or names. It is part of
a decision's store key, so it must mean the same in every process: anything else (an object, a
set) is refused with the tuner's name.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from cubejit.compile.id import canonical
from cubejit.ir.types import Scalar


def anchor(n: int, base: int = 2) -> int:
    """The smallest power of ``base`` at or above ``n`` (1 for ``n <= 1``), so that nearby
    sizes share a tuning key: ``anchor(1000) == anchor(1024) == 1024``."""
    if base == 2 and type(n) is int and n > 1:
        return 1 << (n - 1).bit_length()
    if isinstance(base, bool) or not isinstance(base, int) or base < 2:
        raise ValueError(f"anchor's base must be an int of at least 2, not {base!r}")
    n = int(n)
    if n <= 1:
        return 1
    if base == 2:
        return 1 << (n - 1).bit_length()
    power = 1
    while power < n:
        power *= base
    return power


def canonical_key(tuner: str, key: Any) -> Any:
    """``key`` in the canonical form of :func:`~cubejit.compile.id.canonical`; TypeError naming
    ``tuner`` when it is not made of plain values."""
    try:
        return canonical(_plain(key))
    except TypeError as e:
        raise TypeError(
            f"tuner {tuner}: a tuning key is made of ints, floats, strings, bools, "
            f"dtypes and cubejit types in tuples; {key!r} is not ({e})"
        ) from None


def jsonable_key(key: Any) -> Any:
    """A canonical ``key`` as JSON holds it (tuples as lists, bytes as hex)."""
    if isinstance(key, tuple):
        return [jsonable_key(v) for v in key]
    if isinstance(key, bytes):
        return key.hex()
    return key


def _plain(value: Any) -> Any:
    """``value`` with numpy scalars, dtypes and cubejit types as plain values."""
    if isinstance(value, tuple | list):
        return tuple(_plain(v) for v in value)
    if isinstance(value, np.dtype):
        return str(value)
    if isinstance(value, Scalar):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return value
