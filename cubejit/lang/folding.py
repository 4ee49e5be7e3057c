"""Constant folding that computes what the generated code computes.

An expression of constants only is folded when the kernel is translated, and its value must be
the one the same expression gives at run time, on either backend: floats in their own type with
IEEE results (``log(0.0)`` is ``-inf``, ``0.0 / 0.0`` NaN, ``ceil(-0.5)`` is ``-0.0``), never a
Python exception; integers by the language's rules (``//`` and ``%`` by zero give 0, a shift by
the width or more gives 0, or -1 for a negative shifted right). Floats are computed with numpy's
scalar types, whose arithmetic is IEEE's; ``f16`` and ``bf16`` values are computed in ``f32``
and rounded once to their type, as the backends do.

An integer constant folded from others is computed again in the type it takes (wrapping, as
the generated code would); a constant written in the source (or a comptime value) must fit
that type. A comptime value or ``cj.unroll`` bound outside ``-2**63`` to ``2**64 - 1`` fits no
integer of the language and is refused.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from cubejit.ir.nodes import BinaryOp, MathFn, UnaryOp
from cubejit.ir.types import Kind, Scalar, bf16, round_float
from cubejit.lang.source import Problem

INT_LIMIT = 1 << 64
"""Integer constants lie in ``[-2**63, INT_LIMIT)``: every value of ``i64`` and ``u64``."""

_MATH = np.float64
"""Math functions are computed in ``f64`` and rounded once to their type: as near the exact
result as a libm gets, so each backend's own is within its few ulps (and ``sqrt``, ``floor``,
``fmin`` and the like, correctly rounded everywhere, equal to the bit)."""

_DTYPES: dict[str, type[np.floating]] = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
}

_UNARY_MATH = {
    MathFn.SQRT: np.sqrt,
    MathFn.EXP: np.exp,
    MathFn.LOG: np.log,
    MathFn.SIN: np.sin,
    MathFn.COS: np.cos,
    MathFn.TAN: np.tan,
    MathFn.TANH: np.tanh,
    MathFn.FLOOR: np.floor,
    MathFn.CEIL: np.ceil,
    MathFn.ABS: np.abs,
    MathFn.ASIN: np.arcsin,
    MathFn.ACOS: np.arccos,
    MathFn.ATAN: np.arctan,
    MathFn.SINH: np.sinh,
    MathFn.COSH: np.cosh,
    MathFn.ASINH: np.arcsinh,
    MathFn.ACOSH: np.arccosh,
    MathFn.ATANH: np.arctanh,
    MathFn.ROUND: np.rint,
    MathFn.TRUNC: np.trunc,
    MathFn.EXP2: np.exp2,
    MathFn.LOG2: np.log2,
}
_BINARY_MATH = {
    MathFn.MIN: np.fmin,
    MathFn.MAX: np.fmax,
    MathFn.POW: np.power,
    MathFn.ATAN2: np.arctan2,
    MathFn.HYPOT: np.hypot,
}
_FLOAT_BINARY = {
    BinaryOp.ADD: np.add,
    BinaryOp.SUB: np.subtract,
    BinaryOp.MUL: np.multiply,
    BinaryOp.DIV: np.divide,
    BinaryOp.FLOORDIV: np.floor_divide,
    BinaryOp.MOD: np.remainder,
    BinaryOp.POW: np.power,
    BinaryOp.EQ: np.equal,
    BinaryOp.NE: np.not_equal,
    BinaryOp.LT: np.less,
    BinaryOp.LE: np.less_equal,
    BinaryOp.GT: np.greater,
    BinaryOp.GE: np.greater_equal,
}


def _compute_dtype(t: Scalar) -> type[np.floating]:
    """The numpy type a value of ``t`` is computed in: its own, or ``f32`` for bf16."""
    return np.float32 if t == bf16 else _DTYPES[t.name]


def float_binary(op: BinaryOp, a: float, b: float, t: Scalar) -> float | bool:
    """``a op b`` for operands of the float type ``t``: a float of ``t``, or a bool."""
    dtype = _compute_dtype(t) if op is not BinaryOp.POW else _MATH
    with np.errstate(all="ignore"):
        result = _FLOAT_BINARY[op](dtype(a), dtype(b))
    if op.is_comparison:
        return bool(result)
    return round_float(float(result), t)


def float_math(fn: MathFn, args: list[float], t: Scalar) -> float:
    """``fn(*args)`` in the float type ``t``, IEEE's answer for every operand."""
    dtype = _MATH
    if fn is MathFn.FMA:
        return round_float(_fma(*(float(dtype(a)) for a in args)), t)
    if fn is MathFn.ERF:
        x = float(dtype(args[0]))
        return round_float(math.erf(x) if not math.isnan(x) else x, t)
    with np.errstate(all="ignore"):
        if fn in _UNARY_MATH:
            result = _UNARY_MATH[fn](dtype(args[0]))
        else:
            result = _BINARY_MATH[fn](dtype(args[0]), dtype(args[1]))
    return round_float(float(result), t)


def _fma(a: float, b: float, c: float) -> float:
    """``a * b + c`` rounded once (to ``f64``; exact where all three are finite)."""
    if all(math.isfinite(v) for v in (a, b, c)):
        exact = Fraction(a) * Fraction(b) + Fraction(c)
        if exact == 0:
            return a * b + c
        try:
            return float(exact)
        except OverflowError:
            return math.copysign(math.inf, exact)
    with np.errstate(all="ignore"):
        return float(np.float64(a) * np.float64(b) + np.float64(c))


def check_int(value: int, text: object) -> int:
    """``value``, or a :class:`Problem` when it is beyond every integer of the language."""
    if not -(INT_LIMIT >> 1) <= value < INT_LIMIT:
        raise Problem(
            f"the constant `{text}` is too large for the language's integers (i64 and u64 "
            f"together hold -2**63 to 2**64 - 1)"
        )
    return value


def int_binary(op: BinaryOp, a: int, b: int, text: object) -> int | bool:
    """``a op b`` on integers, by the language's rules where C and Python differ: exact while
    the result stays within 128 bits, and modulo ``2**128`` past them (what a type of 64 bits
    or fewer keeps of it is the same; a value that large fits no integer of the language)."""
    if op is BinaryOp.FLOORDIV:
        return 0 if b == 0 else _wide(a // b)
    if op is BinaryOp.MOD:
        return 0 if b == 0 else a % b
    if op is BinaryOp.SHL:
        return 0 if not 0 <= b < 128 else _wide(a << b)
    if op is BinaryOp.SHR:
        return (-1 if a < 0 else 0) if not 0 <= b < 128 else a >> b
    if op is BinaryOp.POW:
        return _int_pow(a, b) if b < 0 else _wide(pow(a, b, 1 << 128))
    result = _INT_OPS[op](a, b)
    return result if isinstance(result, bool) else _wide(result)


def _wide(value: int) -> int:
    """``value`` reduced into the signed 128-bit range."""
    value &= (1 << 128) - 1
    return value - (1 << 128) if value >> 127 else value


def _int_pow(a: int, b: int) -> int:
    """Integer ``a ** b`` for a negative ``b``: what the backends give, 1 for a base of 1, ±1
    for -1, else 0."""
    return 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0


def int_unary(op: UnaryOp, a: int, text: object) -> int:
    return _wide(-a if op is UnaryOp.NEG else ~a)


def typed_int_binary(op: BinaryOp, a: int, b: int, t: Scalar) -> int:
    """``a op b`` for operands of the integer type ``t``, as the generated code computes it:
    wrapping, with numpy's shifts and the language's ``//`` and ``%`` by zero."""
    if op in (BinaryOp.SHL, BinaryOp.SHR):
        if not 0 <= b < t.bits:
            return -1 if op is BinaryOp.SHR and a < 0 else 0
        return wrap_int(a << b, t) if op is BinaryOp.SHL else a >> b
    if op is BinaryOp.POW:
        if b < 0:
            return _int_pow(a, b)
        return wrap_int(pow(a, b, 1 << t.bits), t)
    if op in (BinaryOp.FLOORDIV, BinaryOp.MOD):
        return wrap_int(int_binary(op, a, b, ""), t)
    return wrap_int(int(_INT_OPS[op](a, b)), t)


def float_to_int(value: float, t: Scalar) -> int:
    """A float converted to the integer type ``t``: truncated, saturating at ``t``'s bounds,
    NaN to 0 (PTX's ``cvt.rzi.sat``, which the CPU's helper copies)."""
    if math.isnan(value):
        return 0
    low, high = (0, (1 << t.bits) - 1) if t.kind is Kind.UINT else _signed(t.bits)
    if value >= high:
        return high
    if value <= low:
        return low
    return int(value)


def wrap_int(value: int, t: Scalar) -> int:
    """``value`` reduced modulo ``2**bits`` into the range of the integer type ``t``."""
    value &= (1 << t.bits) - 1
    if t.kind is Kind.INT and value >= 1 << (t.bits - 1):
        value -= 1 << t.bits
    return value


def _signed(bits: int) -> tuple[int, int]:
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


_INT_OPS: dict[BinaryOp, Callable[[int, int], int | bool]] = {
    BinaryOp.ADD: operator.add,
    BinaryOp.SUB: operator.sub,
    BinaryOp.MUL: operator.mul,
    BinaryOp.BITAND: operator.and_,
    BinaryOp.BITOR: operator.or_,
    BinaryOp.BITXOR: operator.xor,
    BinaryOp.EQ: operator.eq,
    BinaryOp.NE: operator.ne,
    BinaryOp.LT: operator.lt,
    BinaryOp.LE: operator.le,
    BinaryOp.GT: operator.gt,
    BinaryOp.GE: operator.ge,
}
