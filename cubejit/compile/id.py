"""Names for kernels and artifacts that stay the same across processes.

A :class:`KernelId` says everything that decides a kernel's code: its name, what the language
knows of it (``info``: a hash of its source and of what it calls, argument types, comptime
values) and its cube_dim. An :class:`ArtifactId` adds what a launch decides on top of it, the
``variant``. Both are plain values: hashable, equal by value, and ``stable_hash()`` gives the
same hex string in every process, whatever ``PYTHONHASHSEED`` is, so a store on disk can be
keyed by it.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

V = TypeVar("V")


_LENGTH = struct.Struct("<I")

WORDS_LIMIT = 4096
"""How many encodings of number-free values :func:`encode` keeps (see :data:`_words`); past
it, they are forgotten and kept anew."""

_words: dict[tuple[Any, ...], bytes] = {}
"""The encoding of each tuple encoded in this process, inside another, that holds no number:
only ``None``, strings, bytes and such tuples. Two such values that compare equal have one
encoding (a string equals only a string), so a hit is exact; values with numbers are never
kept, since ``1``, ``True`` and ``1.0`` compare equal and encode apart. Kernels of one source
differing in their comptime values share the encoding of their source and types."""


_INTS: dict[int, bytes] = {}
"""The encoding of each int from 0 to 1024 encoded in this process (comptime values, sizes,
dims), made at its first use: a table made whole at import cost a client's creation more than
it saved a warm batch."""

_ATOMS = frozenset((str, int, float, bool, bytes, type(None)))
"""The types a canonical value holds as they are (exactly these: a subclass is looked at)."""


def canonical(value: Any) -> Any:
    """``value`` as nested tuples of plain values, the form ids hold and hash.

    Accepts None, bool, int, float, str, bytes, and lists, tuples and dicts of them (dicts are
    sorted by key). Anything else has no stable meaning across processes and is refused.
    """
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is tuple:
        try:
            if value in _words:
                return value
        except TypeError:
            pass
        changed: list[Any] | None = None
        for at, item in enumerate(value):
            if type(item) not in _ATOMS:
                made = canonical(item)
                if made is not item:
                    if changed is None:
                        changed = list(value)
                    changed[at] = made
        return value if changed is None else tuple(changed)
    if isinstance(value, bool | int | float | str | bytes):
        return value
    if isinstance(value, list | tuple):
        return tuple([canonical(v) for v in value])
    if isinstance(value, dict):
        return tuple(
            sorted(((str(k), canonical(v)) for k, v in value.items()), key=lambda kv: kv[0])
        )
    raise TypeError(
        f"a kernel id holds only None, bool, int, float, str, bytes, lists, tuples and dicts; "
        f"got {type(value).__name__}"
    )


def encode(value: Any) -> bytes:
    """A byte encoding of a canonical value: one value has one encoding, two values two."""
    return _encode(value)[0]


def _encode(value: Any) -> tuple[bytes, bool]:
    """The encoding of ``value``, and whether it holds no number (so it may be kept). The
    strings and ints of a tuple are encoded in its own loop: ids are tuples of them, and a
    call for each was most of an id's hashing."""
    kind = type(value)
    if kind is tuple:
        found = _words.get(value)
        if found is not None:
            return found, True
        chunks = [b"L" + _LENGTH.pack(len(value))]
        plain = True
        for item in value:
            kind = type(item)
            if kind is str:
                data = item.encode("utf-8")
                chunks.append(b"S" + _LENGTH.pack(len(data)) + data)
            elif kind is int:
                data = _INTS.get(item)
                if data is None:
                    text = str(item).encode()
                    data = b"I" + _LENGTH.pack(len(text)) + text
                    if 0 <= item <= 1024:
                        _INTS[item] = data
                chunks.append(data)
                plain = False
            else:
                encoded, item_plain = _encode(item)
                chunks.append(encoded)
                plain = plain and item_plain
        data = b"".join(chunks)
        if plain:
            if len(_words) >= WORDS_LIMIT:
                _words.clear()
            _words[value] = data
        return data, plain
    if kind is str:
        data = value.encode("utf-8")
        return b"S" + _LENGTH.pack(len(data)) + data, True
    if kind is int:
        text = str(value).encode()
        return b"I" + _LENGTH.pack(len(text)) + text, False
    if value is None:
        return b"N", True
    if isinstance(value, bool):
        return (b"T" if value else b"F"), False
    if isinstance(value, int):
        text = str(value).encode()
        return b"I" + _LENGTH.pack(len(text)) + text, False
    if isinstance(value, float):
        if math.isnan(value):
            return b"Dnan", False
        return b"D" + struct.pack("<d", value), False
    if isinstance(value, str):
        data = value.encode("utf-8")
        return b"S" + _LENGTH.pack(len(data)) + data, True
    if isinstance(value, bytes):
        return b"B" + _LENGTH.pack(len(value)) + value, True
    if isinstance(value, tuple):
        return _encode(tuple(value))[0], False
    raise TypeError(f"cannot encode {type(value).__name__}")


def stable_digest(*parts: Any) -> str:
    """SHA-256 hex digest of ``parts`` in their canonical encoding."""
    import hashlib  # here, not at import: OpenSSL's loading is a good part of importing cubejit

    return hashlib.sha256(encode(canonical(parts))).hexdigest()


def canonical_digest(*parts: Any) -> str:
    """:func:`stable_digest` of parts canonical already (an id's own fields, text and names
    made of strings): the same digest, without walking them first."""
    import hashlib

    return hashlib.sha256(encode(parts)).hexdigest()


def _dims(value: int | tuple[int, ...] | list[int]) -> tuple[int, int, int]:
    if type(value) is tuple and len(value) == 3:
        x, y, z = value
        if type(x) is int and type(y) is int and type(z) is int and min(value) >= 1:
            return value  # type: ignore[return-value]
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and d >= 1 for d in dims):
        raise ValueError(
            f"cube_dim must be a positive int or a tuple of 1 to 3 of them, not {value!r}"
        )
    return (*dims, *(1,) * (3 - len(dims)))  # type: ignore[return-value]


@dataclass(frozen=True, slots=True, init=False)
class KernelId:
    """Which kernel: equal ids mean the same code, in any process."""

    name: str
    """The kernel's qualified name."""
    info: Any
    """What else decides the code, in canonical form (see :func:`canonical`)."""
    cube_dim: tuple[int, int, int]
    """Units per cube along x, y, z."""
    _hash: int = field(compare=False, repr=False)
    _stable: str | None = field(compare=False, repr=False)

    def __init__(
        self,
        name: str,
        info: Any = None,
        cube_dim: int | tuple[int, ...] = (1, 1, 1),
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "info", canonical(info))
        object.__setattr__(self, "cube_dim", _dims(cube_dim))
        object.__setattr__(self, "_hash", hash((self.name, self.info, self.cube_dim)))
        object.__setattr__(self, "_stable", None)

    def __hash__(self) -> int:
        return self._hash

    def stable_hash(self) -> str:
        """A hex digest of the whole id, the same in every process; computed once per id,
        since a warm start asks for it several times per kernel (record, store key)."""
        stable = self._stable
        if stable is None:
            stable = canonical_digest("KernelId", self.name, self.info, self.cube_dim)
            object.__setattr__(self, "_stable", stable)
        return stable

    def __str__(self) -> str:
        x, y, z = self.cube_dim
        return f"{self.name}[{x}x{y}x{z}]#{self.stable_hash()[:12]}"


class KernelIdStem:
    """What the ids of one kernel's specs share, the name and the leading parts of ``info``,
    encoded once: :meth:`id` encodes only the rest. A warm process makes an id for every spec it
    prepares, and encoding the whole of each was most of the time its ids took.

    ``head`` must be canonical (as :func:`canonical` gives it), and so must the ``tail`` and
    ``cube_dim`` (three positive ints) given to :meth:`id`: the id is made of them as they are.
    """

    __slots__ = ("_dims", "_prefix", "head", "name", "size")

    def __init__(self, name: str, head: tuple[Any, ...], size: int) -> None:
        self.name = name
        self.head = head
        self.size = size
        """How many parts ``info`` has, head and tail."""
        self._prefix = (
            b"L"
            + _LENGTH.pack(4)
            + encode("KernelId")
            + encode(name)
            + b"L"
            + _LENGTH.pack(size)
            + b"".join([encode(part) for part in head])
        )
        self._dims: dict[tuple[int, int, int], bytes] = {}

    def id(self, tail: tuple[Any, ...], cube_dim: tuple[int, int, int]) -> KernelId:
        """The id of ``info`` = head + ``tail``: equal to ``KernelId(name, info, cube_dim)``,
        stable hash included (computed here, byte for byte as :meth:`KernelId.stable_hash`
        would)."""
        import hashlib

        assert len(self.head) + len(tail) == self.size
        info = self.head + tail
        dims = self._dims.get(cube_dim)
        if dims is None:
            dims = self._dims[cube_dim] = encode(cube_dim)
        encoded = self._prefix + b"".join([encode(part) for part in tail]) + dims
        id = object.__new__(KernelId)
        object.__setattr__(id, "name", self.name)
        object.__setattr__(id, "info", info)
        object.__setattr__(id, "cube_dim", cube_dim)
        object.__setattr__(id, "_hash", hash((self.name, info, cube_dim)))
        object.__setattr__(id, "_stable", hashlib.sha256(encoded).hexdigest())
        return id


@dataclass(frozen=True, slots=True)
class ArtifactId(Generic[V]):
    """Which artifact a launch needs: its kernel, and what the launch adds to it."""

    kernel: KernelId
    """The kernel."""
    variant: V
    """What the launch decides about the artifact that the kernel id does not (the CPU
    backend's buffer alignment); ``None`` when the kernel id says everything."""
    _hash: int = field(init=False, compare=False, repr=False)
    _stable: str | None = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Ids are looked up on every launch: hash once, not on every lookup.
        object.__setattr__(self, "_hash", hash((self.kernel, self.variant)))
        object.__setattr__(self, "_stable", None)

    def __hash__(self) -> int:
        return self._hash

    def stable_hash(self) -> str:
        """A hex digest of kernel and variant, the same in every process; computed once."""
        stable = self._stable
        if stable is None:
            stable = canonical_digest(
                "ArtifactId", self.kernel.stable_hash(), canonical(self.variant)
            )
            object.__setattr__(self, "_stable", stable)
        return stable

    def __str__(self) -> str:
        return str(self.kernel) if self.variant is None else f"{self.kernel}/{self.variant}"
