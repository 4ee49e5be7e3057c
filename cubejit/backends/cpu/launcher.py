"""Turns a launch's Python arguments into the argument block of a CPU kernel, fast.

One :class:`ArgBinder` per kernel spec holds a precompiled ``struct.Struct`` of the layout; a
launch checks each argument against its parameter, packs addresses, lengths and scalars into
one ``bytes`` and computes the alignment variant, in a few microseconds. Anything wrong is a
:class:`~cubejit.errors.LaunchError` naming the kernel and the parameter, raised before the
kernel runs.
"""

from __future__ import annotations

import ctypes
import math
import struct
from typing import Any

import numpy as np

from cubejit.backends.cpu.layout import arg_struct, scalar_format
from cubejit.compile.id import ArtifactId
from cubejit.errors import LaunchError
from cubejit.ir.types import ArrayType, Scalar

MAX_ALIGN = 64
"""The largest alignment variant: a cache line, and the widest vector a CPU loads."""

MAX_UNITS = 2**32 - 1
"""The most units one launch runs: every position, ``ABSOLUTE_POS`` included, is a ``u32``."""

_DATA_OFFSET = 16
_read_word = ctypes.c_size_t.from_address


def _data_by_layout(array: np.ndarray) -> int:
    """The data address from the ndarray object itself (its ``data`` field follows the object
    header); ten times cheaper than ``__array_interface__``."""
    return _read_word(id(array) + _DATA_OFFSET).value


def _data_by_interface(array: np.ndarray) -> int:
    return array.ctypes.data


def _pick_address_reader() -> Any:
    probe = np.arange(3, dtype=np.int64)[1:]
    try:
        if _data_by_layout(probe) == probe.ctypes.data:
            return _data_by_layout
    except (ValueError, OSError):
        pass
    return _data_by_interface


numpy_address = _pick_address_reader()
"""The address of a numpy array's first element."""


class CpuBuffer:
    """A buffer of a CPU client: a 64-byte aligned numpy array that knows its address."""

    __slots__ = ("address", "array", "client", "dtype", "size")

    def __init__(self, array: np.ndarray, client: Any) -> None:
        self.array = array
        """The elements, as a one-dimensional numpy array (the client's memory)."""
        self.address: int = array.ctypes.data
        self.size: int = array.size
        self.dtype: np.dtype = array.dtype
        self.client = client

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"CpuBuffer({self.size} x {self.dtype})"


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"a numpy array of {value.dtype}"
    if isinstance(value, CpuBuffer):
        return f"a buffer of {value.dtype}"
    return f"{type(value).__name__} {value!r}"[:80]


class ArgBinder:
    """Checks and packs the arguments of one kernel spec."""

    def __init__(self, spec: Any, client: Any) -> None:
        self.spec = spec
        self.name: str = spec.name
        self.client = client
        self.params = tuple(spec.params)
        self.pack = arg_struct(self.params).pack
        self.plan = tuple(
            (p.name, p.type.elem.dtype) if isinstance(p.type, ArrayType) else (p.name, None)
            for p in self.params
        )
        self.widest = max(
            (p.type.elem.itemsize for p in self.params if isinstance(p.type, ArrayType)), default=1
        )
        self.units_per_cube: int = math.prod(spec.cube_dim)
        self.artifact_ids: dict[int, ArtifactId[int]] = {}
        """The artifact id of each alignment variant seen, built once."""
        self.entries: dict[int, Any] = {}

    def artifact_id(self, variant: int) -> ArtifactId[int]:
        aid = self.artifact_ids.get(variant)
        if aid is None:
            aid = self.artifact_ids[variant] = ArtifactId(self.spec.id(), variant)
        return aid

    def bind(self, counts: tuple[int, int, int], args: tuple[Any, ...]) -> tuple[bytes, int]:
        """The packed argument block and the alignment variant of ``args``."""
        if len(args) != len(self.plan):
            raise LaunchError(
                f"kernel {self.name} takes {len(self.plan)} arguments "
                f"({', '.join(n for n, _ in self.plan)}), got {len(args)}"
            )
        if counts[0] * counts[1] * counts[2] * self.units_per_cube > MAX_UNITS:
            raise LaunchError(
                f"kernel {self.name}: cube_count {counts} of {self.units_per_cube} units each "
                f"makes more than {MAX_UNITS} units, beyond what a u32 position can number"
            )
        values: list[Any] = [*counts]
        low = MAX_ALIGN
        for (name, dtype), arg in zip(self.plan, args, strict=True):
            if dtype is None:
                values.append(arg)
                continue
            kind = type(arg)
            if kind is CpuBuffer:
                if arg.client is not self.client or arg.dtype != dtype:
                    raise self.wrong_array(name, dtype, arg)
                address = arg.address
            elif kind is np.ndarray:
                if arg.dtype != dtype or not arg.flags.c_contiguous:
                    raise self.wrong_array(name, dtype, arg)
                address = numpy_address(arg)
            else:
                raise self.wrong_array(name, dtype, arg)
            low |= address
            values.append(address)
            values.append(arg.size)
        variant = low & -low
        if variant < self.widest:
            self.check_alignment(args)
        try:
            return self.pack(*values), variant
        except (struct.error, OverflowError, TypeError, ValueError):
            raise self.wrong_scalar(args) from None

    def wrong_array(self, name: str, dtype: np.dtype, arg: Any) -> LaunchError:
        if isinstance(arg, CpuBuffer) and arg.client is not self.client:
            why = "a buffer of another client"
        elif isinstance(arg, np.ndarray) and arg.dtype == dtype:
            why = "a numpy array that is not C-contiguous (pass np.ascontiguousarray(...))"
        else:
            why = _describe(arg)
        return LaunchError(
            f"kernel {self.name}: argument {name!r} must be an array of "
            f"{dtype} (a buffer of this client or a C-contiguous numpy array), "
            f"got {why}"
        )

    def wrong_scalar(self, args: tuple[Any, ...]) -> LaunchError:
        for param, arg in zip(self.params, args, strict=True):
            if isinstance(param.type, Scalar) and not _fits(param.type, arg):
                return LaunchError(
                    f"kernel {self.name}: argument {param.name!r} must be "
                    f"convertible to {param.type.name}, got {_describe(arg)}"
                )
        return LaunchError(f"kernel {self.name}: arguments do not fit its signature")

    def check_alignment(self, args: tuple[Any, ...]) -> None:
        for (name, dtype), arg in zip(self.plan, args, strict=True):
            if dtype is not None and numpy_address(getattr(arg, "array", arg)) % dtype.itemsize:
                raise LaunchError(
                    f"kernel {self.name}: argument {name!r} is not aligned to "
                    f"its element size ({dtype.itemsize} bytes)"
                )


def _fits(t: Scalar, value: Any) -> bool:
    if t.name == "bool":
        return isinstance(value, bool | np.bool_)
    try:
        struct.pack("<" + scalar_format(t), value)
    except (struct.error, OverflowError, TypeError, ValueError):
        return False
    return True
