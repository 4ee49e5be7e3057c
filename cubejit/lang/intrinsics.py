"""The builtins of the kernel language that are Python objects: math markers, ``unroll``, ``cdiv``.

Inside a kernel the frontend recognises these objects by identity and expands them to IR.
Outside a kernel they also work as plain Python (``cj.sqrt(2.0)``, ``cj.cdiv(n, 256)``), so a
``@cj.function`` can be tried on the host and launch geometry computed with the same names.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

from cubejit.ir.nodes import MathFn


class MathMarker:
    """A math function of the language (``cj.sqrt`` ...): the IR's ``fn`` inside a kernel, a
    Python implementation outside one (also used to fold calls on constants)."""

    __slots__ = ("arity", "fn", "python", "takes_ints")

    def __init__(
        self, fn: MathFn, arity: int, python: Callable[..., Any], takes_ints: bool = False
    ) -> None:
        self.fn = fn
        self.arity = arity
        """How many arguments it takes; ``-1`` means two or more (``min``, ``max``)."""
        self.python = python
        self.takes_ints = takes_ints
        """Whether integer operands are allowed (abs, min, max); the others take floats."""

    def __call__(self, *args: Any) -> Any:
        return self.python(*args)

    def __repr__(self) -> str:
        return f"cj.{self.fn.value}"


def _fma(a: float, b: float, c: float) -> float:
    return a * b + c


sqrt = MathMarker(MathFn.SQRT, 1, math.sqrt)
exp = MathMarker(MathFn.EXP, 1, math.exp)
log = MathMarker(MathFn.LOG, 1, math.log)
sin = MathMarker(MathFn.SIN, 1, math.sin)
cos = MathMarker(MathFn.COS, 1, math.cos)
tan = MathMarker(MathFn.TAN, 1, math.tan)
tanh = MathMarker(MathFn.TANH, 1, math.tanh)
erf = MathMarker(MathFn.ERF, 1, math.erf)
floor = MathMarker(MathFn.FLOOR, 1, lambda x: float(math.floor(x)))
ceil = MathMarker(MathFn.CEIL, 1, lambda x: float(math.ceil(x)))
abs = MathMarker(MathFn.ABS, 1, builtins.abs, takes_ints=True)
min = MathMarker(MathFn.MIN, -1, builtins.min, takes_ints=True)
max = MathMarker(MathFn.MAX, -1, builtins.max, takes_ints=True)
pow = MathMarker(MathFn.POW, 2, lambda x, y: float(x) ** y)
fma = MathMarker(MathFn.FMA, 3, _fma)

PYTHON_BUILTINS: dict[object, MathMarker] = {
    builtins.abs: abs,
    builtins.min: min,
    builtins.max: max,
}
"""Python's own ``abs``, ``min`` and ``max`` mean the language's inside a kernel."""


def unroll(loop: range) -> range:
    """``for i in cj.unroll(range(N))``: inside a kernel, with comptime ``N``, the body is
    repeated ``N`` times with ``i`` a constant. Outside a kernel it returns ``loop``."""
    return loop


def cdiv(a: int, b: int) -> int:
    """Ceiling division of integers: ``cj.cdiv(n, 256)`` cubes of 256 cover ``n`` units.
    Inside a kernel it is integer ceiling division of the operands' type."""
    return -(-a // b)
