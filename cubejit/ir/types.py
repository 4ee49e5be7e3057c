"""The types of the IR: scalars, one-dimensional arrays and strided tensors of them.

A type is a frozen value compared by equality. The kernel language exposes the scalars as
``cj.f32`` and friends and builds buffer types with ``cj.Array[cj.f32]`` and
``cj.Tensor[cj.f32]``; backends map each scalar to their own spelling through
:attr:`Scalar.name`.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np


class Kind(enum.Enum):
    """What family a scalar belongs to; arithmetic rules differ by family."""

    BOOL = "bool"
    INT = "int"
    UINT = "uint"
    FLOAT = "float"


@dataclass(frozen=True, slots=True)
class Scalar:
    """A scalar type. ``name`` is the language's spelling (``"f32"``) and the IR's."""

    name: str
    """The spelling in kernels and IR text, unique among scalars."""
    kind: Kind
    """The family: bool, signed int, unsigned int or float."""
    bits: int
    """Width in bits (8 for bool, which is stored as one byte)."""

    @property
    def itemsize(self) -> int:
        """Bytes one value occupies in a buffer."""
        return self.bits // 8

    @property
    def is_int(self) -> bool:
        """Signed or unsigned integer."""
        return self.kind in (Kind.INT, Kind.UINT)

    @property
    def is_float(self) -> bool:
        return self.kind is Kind.FLOAT

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of a buffer of this scalar (bf16 has none: ``uint16`` storage)."""
        return np.dtype(_NUMPY[self.name])

    @property
    def numpy_name(self) -> str:
        """The name of :attr:`dtype` (``uint16`` for bf16), read from a table: numpy computes a
        dtype's name in Python, several µs, and a launch compares it for every array of another
        library."""
        return _NUMPY[self.name]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"cj.{self.name}"


@dataclass(frozen=True, slots=True)
class ArrayType:
    """A one-dimensional buffer of ``elem``, with a length known at launch."""

    elem: Scalar
    """The element type."""
    atomic: bool = False
    """Whether the elements are ``cj.Atomic[elem]`` (read and written by atomic operations
    only); at launch such an array takes a buffer of ``elem``."""
    line: int | None = None
    """``None`` for plain elements; for ``cj.Line[elem]`` the lanes per line, or
    :data:`LINE_AT_LAUNCH` in a signature whose line size each launch chooses."""

    def __str__(self) -> str:
        if self.atomic:
            return f"Array[Atomic[{self.elem.name}]]"
        return f"Array[{line_spelling(self.elem, self.line)}]"

    def __repr__(self) -> str:
        if self.atomic:
            return f"cj.Array[cj.Atomic[cj.{self.elem.name}]]"
        return f"cj.Array[cj.{line_spelling(self.elem, self.line)}]"


@dataclass(frozen=True, slots=True)
class TensorType:
    """An n-dimensional strided view of a buffer of ``elem``: its rank is part of the kernel,
    its shape and strides (in elements) are values a launch passes."""

    elem: Scalar
    """The element type."""
    rank: int | None = None
    """The number of dimensions, at least 1; ``None`` in a signature whose rank each launch's
    argument decides (a kernel's IR always has a rank)."""
    atomic: bool = False
    """Whether the elements are ``cj.Atomic[elem]``; at launch such a tensor takes a buffer of
    ``elem``."""
    line: int | None = None
    """As :attr:`ArrayType.line`: the lanes of each line of its innermost dimension."""

    def __str__(self) -> str:
        rank = "" if self.rank is None else f", {self.rank}"
        elem = f"Atomic[{self.elem.name}]" if self.atomic else line_spelling(self.elem, self.line)
        return f"Tensor[{elem}{rank}]"

    def __repr__(self) -> str:
        rank = "" if self.rank is None else f", {self.rank}"
        if self.atomic:
            return f"cj.Tensor[cj.Atomic[cj.{self.elem.name}]{rank}]"
        return f"cj.Tensor[cj.{line_spelling(self.elem, self.line)}{rank}]"


LINE_AT_LAUNCH = 0
"""The line size of a ``cj.Line[T]`` parameter before a launch has chosen it."""

LINE_SIZES = (8, 4, 2, 1)
"""The lanes a line may have, widest first."""

MAX_LINE_BYTES = 16
"""The most bytes one line spans: one 16-byte load or store."""


@dataclass(frozen=True, slots=True)
class LineType:
    """``cj.Line[T]`` (``width`` :data:`LINE_AT_LAUNCH`, chosen per argument at launch) or
    ``cj.Line[T, n]``: an element made of lanes of the scalar ``elem``."""

    elem: Scalar
    width: int = LINE_AT_LAUNCH

    def __str__(self) -> str:
        return line_spelling(self.elem, self.width)


def line_spelling(elem: Scalar, line: int | None) -> str:
    """How a buffer's element reads in types and messages: ``f32``, ``Line[f32]`` (its size
    still to choose) or ``Line[f32, 4]``."""
    if line is None:
        return elem.name
    return f"Line[{elem.name}]" if line == LINE_AT_LAUNCH else f"Line[{elem.name}, {line}]"


BufferType = ArrayType | TensorType
"""A parameter passed as a buffer rather than by value."""

Type = Scalar | ArrayType | TensorType

bool_ = Scalar("bool", Kind.BOOL, 8)
i8 = Scalar("i8", Kind.INT, 8)
i16 = Scalar("i16", Kind.INT, 16)
i32 = Scalar("i32", Kind.INT, 32)
i64 = Scalar("i64", Kind.INT, 64)
u8 = Scalar("u8", Kind.UINT, 8)
u16 = Scalar("u16", Kind.UINT, 16)
u32 = Scalar("u32", Kind.UINT, 32)
u64 = Scalar("u64", Kind.UINT, 64)
f16 = Scalar("f16", Kind.FLOAT, 16)
bf16 = Scalar("bf16", Kind.FLOAT, 16)
f32 = Scalar("f32", Kind.FLOAT, 32)
f64 = Scalar("f64", Kind.FLOAT, 64)

SCALARS: dict[str, Scalar] = {
    t.name: t for t in (bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64)
}
"""Every scalar by name."""

_NUMPY = {
    "bool": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "f16": "float16",
    "bf16": "uint16",
    "f32": "float32",
    "f64": "float64",
}


def from_dtype(dtype: np.dtype) -> Scalar | None:
    """The scalar whose buffers have ``dtype``; ``None`` when cubejit has none (bf16 buffers
    cannot be told apart from ``uint16`` ones and are never inferred). Answered from a table
    after the first time, since every launch asks."""
    try:
        return _BY_DTYPE[dtype]
    except KeyError:
        pass
    except TypeError:
        return _scalar_of_dtype(dtype)
    scalar = _BY_DTYPE[dtype] = _scalar_of_dtype(dtype)
    return scalar


_BY_DTYPE: dict[np.dtype, Scalar | None] = {}


def from_typestr(typestr: str) -> tuple[np.dtype, Scalar | None]:
    """The dtype an array interface's ``typestr`` names (or a numpy dtype's name, as a
    :class:`~cubejit.runtime.arguments.BufferView` holds it) and its scalar
    (:func:`from_dtype`), from a table after the first time: another library's array is read
    at every launch. Raises ``TypeError`` for a string that names no dtype."""
    found = _BY_TYPESTR.get(typestr)
    if found is None:
        dtype = np.dtype(typestr)
        found = _BY_TYPESTR[typestr] = dtype, from_dtype(dtype)
    return found


_BY_TYPESTR: dict[str, tuple[np.dtype, Scalar | None]] = {}


def name_of(dtype: np.dtype) -> str:
    """``dtype.name`` from a table after the first time (numpy computes it in Python, several
    µs: a launch reads it for every array of another library)."""
    name = _NAMES.get(dtype)
    if name is None:
        name = _NAMES[dtype] = dtype.name
    return name


_NAMES: dict[np.dtype, str] = {}


def _scalar_of_dtype(dtype: np.dtype) -> Scalar | None:
    for name, numpy_name in _NUMPY.items():
        if name != "bf16" and np.dtype(numpy_name) == dtype:
            return SCALARS[name]
    return None


def round_float(value: float, t: Scalar) -> float:
    """``value`` rounded once, to nearest even, to the float type ``t`` (as a Python float)."""
    if t == f64:
        return float(value)
    if t == bf16:
        return _round_to_precision(float(value), 8, -126, 127)
    with np.errstate(all="ignore"):
        return float(np.dtype(_NUMPY[t.name]).type(value))


def _round_to_precision(x: float, digits: int, emin: int, emax: int) -> float:
    """``x`` rounded to ``digits`` significant bits, ties to even, with IEEE's gradual
    underflow below ``2**emin`` and infinity past the largest finite value."""
    if not math.isfinite(x) or x == 0.0:
        return x
    _, exponent = math.frexp(x)
    quantum = max(exponent - digits, emin - digits + 1)
    scaled = math.ldexp(x, -quantum)
    rounded = math.ldexp(float(round(scaled)), quantum)
    largest = math.ldexp(float((1 << digits) - 1), emax - digits + 1)
    return math.copysign(math.inf, x) if abs(rounded) > largest else rounded
