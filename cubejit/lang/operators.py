"""The typing rules of operators, casts and math calls, and constant folding.

Two constants fold with Python's own arithmetic and stay untyped (so ``N * 2`` of a comptime
``N`` is still a constant). Otherwise the operands get one type by
:func:`~cubejit.lang.values.unify` and the operator must make sense for it: arithmetic on
numbers, ``/`` on floats, bit operations on integers, ``and``/``or``/``not`` on bools.
Nothing is ever widened or converted silently.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from cubejit.ir.nodes import Binary, BinaryOp, Cast, Const, Expr, Math, Unary, UnaryOp
from cubejit.ir.types import Kind, Scalar, bool_
from cubejit.lang.intrinsics import MathMarker
from cubejit.lang.source import Problem, Spelling
from cubejit.lang.values import Literal, Scalarish, coerce, int_range, unify

ARITHMETIC = frozenset(
    (BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.FLOORDIV, BinaryOp.MOD, BinaryOp.POW)
)
BITWISE = frozenset((BinaryOp.BITAND, BinaryOp.BITOR, BinaryOp.BITXOR))
SHIFTS = frozenset((BinaryOp.SHL, BinaryOp.SHR))

_PYTHON: dict[BinaryOp, Callable[[Any, Any], Any]] = {
    BinaryOp.ADD: operator.add,
    BinaryOp.SUB: operator.sub,
    BinaryOp.MUL: operator.mul,
    BinaryOp.DIV: operator.truediv,
    BinaryOp.FLOORDIV: operator.floordiv,
    BinaryOp.MOD: operator.mod,
    BinaryOp.POW: operator.pow,
    BinaryOp.BITAND: operator.and_,
    BinaryOp.BITOR: operator.or_,
    BinaryOp.BITXOR: operator.xor,
    BinaryOp.SHL: operator.lshift,
    BinaryOp.SHR: operator.rshift,
    BinaryOp.EQ: operator.eq,
    BinaryOp.NE: operator.ne,
    BinaryOp.LT: operator.lt,
    BinaryOp.LE: operator.le,
    BinaryOp.GT: operator.gt,
    BinaryOp.GE: operator.ge,
}


def _is_number(value: bool | int | float) -> bool:
    return not isinstance(value, bool)


def _check_operands(op: BinaryOp, t: Scalar, rhs: Scalar, text: Spelling) -> None:
    symbol = op.symbol
    if op in ARITHMETIC and t.kind is Kind.BOOL:
        raise Problem(f"`{symbol}` on bools in `{text}`: cast to a number first, e.g. cj.i32(b)")
    if op is BinaryOp.DIV and not t.is_float:
        raise Problem(
            f"`/` on integers ({t}) in `{text}` is not supported (it would need a "
            f"float type nobody asked for): write `//` for floor division, or cast "
            f"to a float first, e.g. cj.f32(a) / cj.f32(b)"
        )
    if (op in BITWISE or op in SHIFTS) and not (t.is_int and rhs.is_int):
        hint = " use `and` / `or` on bools" if t.kind is Kind.BOOL else ""
        raise Problem(f"`{symbol}` takes integers, not {t}, in `{text}`;{hint or ' cast first'}")
    if op is BinaryOp.POW and t.is_int != rhs.is_int:
        raise Problem(f"`**` mixes {t} and {rhs} in `{text}`: cast one side")


def fold_binary(op: BinaryOp, lhs: Literal, rhs: Literal, text: Spelling) -> Literal:
    """Two constants combined with Python's arithmetic."""
    a, b = lhs.value, rhs.value
    symbol = op.symbol
    numeric = _is_number(a) and _is_number(b)
    if (op in ARITHMETIC or op is BinaryOp.DIV) and not numeric:
        raise Problem(f"`{symbol}` on bools in `{text}`: cast to a number first")
    if (op in BITWISE or op in SHIFTS) and not (
        isinstance(a, int) and isinstance(b, int) and numeric
    ):
        raise Problem(f"`{symbol}` takes integers in `{text}`")
    if op is BinaryOp.DIV and isinstance(a, int) and isinstance(b, int):
        raise Problem(
            f"`/` on two integer constants in `{text}`: write `//` for floor "
            f"division, or write a float constant such as 2.0"
        )
    if op is BinaryOp.POW and isinstance(a, int) and isinstance(b, int) and b < 0:
        raise Problem(f"an integer to a negative power in `{text}`: write a float constant")
    if op in SHIFTS and b < 0:
        raise Problem(f"a negative shift count in `{text}`")
    try:
        return Literal(_PYTHON[op](a, b))
    except ZeroDivisionError:
        raise Problem(f"division by zero in `{text}`") from None
    except OverflowError:
        raise Problem(f"the constant `{text}` overflows") from None


def binary(op: BinaryOp, lhs: Scalarish, rhs: Scalarish, text: Spelling) -> Scalarish:
    """``lhs op rhs`` for any operator but ``and``/``or``; ``text`` is the source, for messages."""
    if isinstance(lhs, Literal) and isinstance(rhs, Literal):
        return fold_binary(op, lhs, rhs, text)
    if op in SHIFTS or op is BinaryOp.POW:
        if isinstance(lhs, Literal):
            lhs = coerce(lhs, rhs.type, text.quote())  # type: ignore[union-attr]
        if isinstance(rhs, Literal):
            rhs = coerce(rhs, lhs.type, text.quote())
        if lhs.type != rhs.type and not (op in SHIFTS or lhs.type.is_int):
            a, b = unify([lhs, rhs], text.quote())
        else:
            a, b = lhs, rhs
    else:
        a, b = unify([lhs, rhs], text.quote())
    _check_operands(op, a.type, b.type, text)
    return Binary(op, a, b, bool_ if op.is_comparison else a.type)


def unary(op: UnaryOp, operand: Scalarish, text: Spelling) -> Scalarish:
    """``-x``, ``not x`` or ``~x``."""
    value_type = type(operand.value) if isinstance(operand, Literal) else None
    t = operand.type if not isinstance(operand, Literal) else None
    is_bool = value_type is bool or (t is not None and t.kind is Kind.BOOL)
    if op is UnaryOp.NOT and not is_bool:
        raise Problem(f"`not` takes a bool in `{text}`; compare instead, e.g. `x == 0`")
    if op is UnaryOp.NEG and is_bool:
        raise Problem(f"`-` on a bool in `{text}`: cast to a number first")
    if op is UnaryOp.INVERT and (
        is_bool or value_type is float or (t is not None and not t.is_int)
    ):
        raise Problem(f"`~` takes an integer in `{text}`; for a bool write `not`")
    if isinstance(operand, Literal):
        v = operand.value
        return Literal(not v if op is UnaryOp.NOT else -v if op is UnaryOp.NEG else ~v)
    return Unary(op, operand, operand.type)


def cast(value: Scalarish, t: Scalar, text: Spelling) -> Expr:
    """``cj.T(value)``: C's conversion; a constant is converted now (and must fit)."""
    if not isinstance(value, Literal):
        return value if value.type == t else Cast(value, t)
    v = value.value
    if t.kind is Kind.BOOL:
        return Const(bool(v), t)
    if t.is_float:
        return Const(float(v), t)
    if isinstance(v, float) and not math.isfinite(v):
        raise Problem(f"`{text}`: {v} has no integer value")
    number = int(v)
    low, high = int_range(t)
    if not low <= number <= high:
        raise Problem(f"`{text}`: {number} does not fit in {t} ({low} to {high})")
    return Const(number, t)


def math_call(marker: MathMarker, args: list[Scalarish], text: Spelling) -> Scalarish:
    """A call of ``cj.sqrt`` and friends (or Python's abs/min/max)."""
    name = marker.fn.value
    if marker.arity == -1:
        if len(args) < 2:
            raise Problem(f"`{name}` takes two or more arguments in `{text}`")
    elif len(args) != marker.arity:
        raise Problem(f"`{name}` takes {marker.arity} argument(s), got {len(args)}, in `{text}`")
    if all(isinstance(a, Literal) for a in args):
        values = [a.value for a in args]  # type: ignore[union-attr]
        if any(isinstance(v, bool) for v in values):
            raise Problem(f"`{name}` takes numbers, not bools, in `{text}`")
        try:
            return Literal(marker.python(*values))
        except (ValueError, OverflowError) as exc:
            raise Problem(f"`{text}` has no value ({exc})") from None
    typed_args = unify(args, text.quote())
    t = typed_args[0].type
    if t.kind is Kind.BOOL or (t.is_int and not marker.takes_ints):
        allowed = "numbers" if marker.takes_ints else "floats"
        raise Problem(
            f"`{name}` takes {allowed}, not {t}, in `{text}`; cast first, e.g. cj.f32(...)"
        )
    if marker.arity == -1:
        result = typed_args[0]
        for arg in typed_args[1:]:
            result = Math(marker.fn, (result, arg), t)
        return result
    return Math(marker.fn, tuple(typed_args), t)
