"""The annotations a kernel signature is written with: scalars, ``cj.Array[T]``,
``cj.Tensor[T]`` and ``cj.Comptime[T]``.

``cj.Array[cj.f32]`` evaluates to the IR's :class:`~cubejit.ir.types.ArrayType` and
``cj.Tensor[cj.f32]`` to a :class:`~cubejit.ir.types.TensorType` whose rank each launch's argument
decides (``cj.Tensor[cj.f32, 2]`` fixes it), so an annotation means the same whether Python
evaluated it or the frontend read it from the source.
"""

from __future__ import annotations

import builtins
import operator
from dataclasses import dataclass

import numpy as np

from cubejit.ir.types import (
    LINE_AT_LAUNCH,
    LINE_SIZES,
    ArrayType,
    LineType,
    Scalar,
    TensorType,
    Type,
)


class Array:
    """``cj.Array[T]``: a one-dimensional buffer of the scalar ``T`` (indexable, ``.len()``)."""

    def __class_getitem__(cls, elem: object) -> ArrayType:
        if isinstance(elem, Scalar):
            return ArrayType(elem)
        if isinstance(elem, LineType):
            return ArrayType(elem.elem, line=elem.width)
        if _is_atomic(elem):
            return ArrayType(elem.elem, atomic=True)  # type: ignore[attr-defined]
        raise TypeError(f"cj.Array[...] takes a scalar type such as cj.f32, not {elem!r}")


class Tensor:
    """``cj.Tensor[T]``: an n-dimensional strided view of a buffer of the scalar ``T``, its rank
    taken from the argument at launch; ``cj.Tensor[T, rank]`` fixes the rank."""

    def __class_getitem__(cls, params: object) -> TensorType:
        elem, rank = params if isinstance(params, tuple) and len(params) == 2 else (params, None)
        line: int | None = None
        if isinstance(elem, LineType):
            line = elem.width
            elem = elem.elem
        atomic = not isinstance(elem, Scalar) and _is_atomic(elem)
        if atomic:
            elem = elem.elem  # type: ignore[union-attr]
        if not isinstance(elem, Scalar):
            raise TypeError(f"cj.Tensor[...] takes a scalar type such as cj.f32, not {elem!r}")
        if rank is not None and (not isinstance(rank, builtins.int) or isinstance(rank, bool)):
            raise TypeError(f"the rank of cj.Tensor[T, rank] is an int, not {rank!r}")
        if rank is not None and rank < 1:
            raise TypeError(f"a tensor has rank 1 or more, not {rank}")
        return TensorType(elem, rank, atomic, line)


def _is_atomic(elem: object) -> bool:
    """Whether ``elem`` is ``cj.Atomic[T]``. Asked only of elements that are not plain scalars:
    the cooperation module holds objects of the IR, which a plain annotation never needs."""
    from cubejit.lang.cooperation import AtomicType

    return isinstance(elem, AtomicType)


class Line:
    """``cj.Line[T]``: an element of lanes of the scalar ``T``, for arrays, tensors, shared
    memory and local arrays. As a parameter's element its line size is chosen at each launch
    (``cj.lined(x, n)`` forces it); ``cj.Line[T, n]`` fixes ``n`` lanes (shared memory and
    local arrays need it)."""

    def __class_getitem__(cls, params: object) -> LineType:
        elem, width = (
            params if isinstance(params, tuple) and len(params) == 2 else (params, LINE_AT_LAUNCH)
        )
        if not isinstance(elem, Scalar) or elem.name == "bool":
            raise TypeError(f"cj.Line[...] takes a number type such as cj.f32, not {elem!r}")
        if width != LINE_AT_LAUNCH and width not in LINE_SIZES:
            raise TypeError(f"a line has {', '.join(map(str, LINE_SIZES))} lanes, not {width!r}")
        return LineType(elem, width)


COMPTIME_KINDS = (builtins.int, builtins.bool, builtins.float)


@dataclass(frozen=True, slots=True)
class ComptimeType:
    """The annotation ``cj.Comptime[kind]``: a parameter fixed when the kernel is specialised."""

    kind: type
    """``int``, ``bool`` or ``float``: the Python type its value is converted to."""

    def convert(self, value: object) -> bool | int | float:
        """``value`` as this parameter's kind; raises ``TypeError`` saying what was expected."""
        if type(value) is self.kind:
            return value  # type: ignore[return-value]
        is_bool = isinstance(value, builtins.bool | np.bool_)
        if self.kind is builtins.bool and is_bool:
            return builtins.bool(value)
        if self.kind is not builtins.bool and not is_bool:
            if isinstance(value, builtins.int | np.integer):
                return self.kind(operator.index(value))
            if self.kind is builtins.float and isinstance(value, builtins.float | np.floating):
                return builtins.float(value)
        raise TypeError(f"expected {self.kind.__name__}, got {type(value).__name__} {value!r}")

    def __str__(self) -> str:
        return f"Comptime[{self.kind.__name__}]"


class Comptime:
    """``cj.Comptime[int]`` / ``[bool]`` / ``[float]``: a parameter passed to ``launch`` and
    ``specialize`` by keyword, folded into the kernel as a constant and part of its identity."""

    def __class_getitem__(cls, kind: object) -> ComptimeType:
        if kind not in COMPTIME_KINDS:
            raise TypeError(f"cj.Comptime[...] takes int, bool or float, not {kind!r}")
        return ComptimeType(kind)  # type: ignore[arg-type]


ParamAnnotation = Type | ComptimeType
