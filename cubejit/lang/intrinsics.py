"""The builtins of the kernel language that are Python objects: math markers, ``unroll``,
``isnan``/``isinf`` and ``bitcast`` (``cdiv`` is :mod:`cubejit.lang.division`'s).

Inside a kernel the frontend recognises these objects by identity and expands them to IR.
Outside a kernel they also work as plain Python (``cj.sqrt(2.0)``, ``cj.cdiv(n, 256)``), so a
``@cj.function`` can be tried on the host and launch geometry computed with the same names.
"""

from __future__ import annotations

import builtins
import functools
import math
from typing import Any

from cubejit.ir.nodes import MathFn
from cubejit.ir.types import f64
from cubejit.lang.folding import float_math


class MathMarker:
    """A math function of the language (``cj.sqrt`` ...): the IR's ``fn`` inside a kernel, a
    function of Python numbers outside one, computing what a kernel computes in ``f64``."""

    __slots__ = ("arity", "fn", "takes_ints")

    def __init__(self, fn: MathFn, arity: int, takes_ints: bool = False) -> None:
        self.fn = fn
        self.arity = arity
        """How many arguments it takes; ``-1`` means two or more (``min``, ``max``)."""
        self.takes_ints = takes_ints
        """Whether integer operands are allowed (abs, min, max); the others take floats."""

    def __call__(self, *args: Any) -> Any:
        if self.takes_ints and all(isinstance(a, int) for a in args):
            if self.fn is MathFn.ABS:
                return builtins.abs(args[0])
            return builtins.min(args) if self.fn is MathFn.MIN else builtins.max(args)
        if self.arity == -1:
            return functools.reduce(lambda a, b: float_math(self.fn, [a, b], f64), args)
        return float_math(self.fn, [float(a) for a in args], f64)

    def __repr__(self) -> str:
        return f"cj.{self.fn.value}"


sqrt = MathMarker(MathFn.SQRT, 1)
exp = MathMarker(MathFn.EXP, 1)
log = MathMarker(MathFn.LOG, 1)
sin = MathMarker(MathFn.SIN, 1)
cos = MathMarker(MathFn.COS, 1)
tan = MathMarker(MathFn.TAN, 1)
tanh = MathMarker(MathFn.TANH, 1)
erf = MathMarker(MathFn.ERF, 1)
floor = MathMarker(MathFn.FLOOR, 1)
ceil = MathMarker(MathFn.CEIL, 1)
abs = MathMarker(MathFn.ABS, 1, takes_ints=True)
min = MathMarker(MathFn.MIN, -1, takes_ints=True)
max = MathMarker(MathFn.MAX, -1, takes_ints=True)
pow = MathMarker(MathFn.POW, 2)
fma = MathMarker(MathFn.FMA, 3)
atan2 = MathMarker(MathFn.ATAN2, 2)
asin = MathMarker(MathFn.ASIN, 1)
acos = MathMarker(MathFn.ACOS, 1)
atan = MathMarker(MathFn.ATAN, 1)
sinh = MathMarker(MathFn.SINH, 1)
cosh = MathMarker(MathFn.COSH, 1)
asinh = MathMarker(MathFn.ASINH, 1)
acosh = MathMarker(MathFn.ACOSH, 1)
atanh = MathMarker(MathFn.ATANH, 1)
round = MathMarker(MathFn.ROUND, 1)
trunc = MathMarker(MathFn.TRUNC, 1)
exp2 = MathMarker(MathFn.EXP2, 1)
log2 = MathMarker(MathFn.LOG2, 1)
hypot = MathMarker(MathFn.HYPOT, 2)

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


def isnan(x: float) -> bool:
    """Whether ``x`` is NaN. Inside a kernel: a bool, for floats of any type."""
    return math.isnan(x)


def isinf(x: float) -> bool:
    """Whether ``x`` is an infinity. Inside a kernel: a bool, for floats of any type."""
    return math.isinf(x)


def bitcast(value: Any, t: Any) -> Any:
    """``cj.bitcast(v, cj.u32)``: the bits of ``v`` read as a type of the same width. Inside a
    kernel only (outside one, numpy's ``view`` does it)."""
    raise TypeError("cj.bitcast works inside kernels; on the host use numpy's .view(dtype)")


def line(value: Any, n: int) -> Any:
    """``cj.line(v, n)``: a line of ``n`` (comptime) copies of the scalar ``v``. Inside a kernel
    only."""
    raise TypeError("cj.line works inside kernels; on the host use np.full(n, v)")
