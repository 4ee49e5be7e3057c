"""The typing rules of operators, casts and math calls, and constant folding.

Two constants fold as the generated code computes (:mod:`~cubejit.lang.folding`) and stay
untyped (so ``N * 2`` of a comptime ``N`` is still a constant). Otherwise the operands get one
type by :func:`~cubejit.lang.values.unify` and the operator must make sense for it: arithmetic on
numbers, ``/`` on floats, bit operations on integers, ``and``/``or``/``not`` on bools.
Nothing is ever widened or converted silently, but for one exactness: a comparison of a signed
with an unsigned integer compares their values.
"""

from __future__ import annotations

import builtins

from cubejit.ir.nodes import (
    Binary,
    BinaryOp,
    Bitcast,
    Cast,
    Const,
    Expr,
    Math,
    MathFn,
    Select,
    Unary,
    UnaryOp,
)
from cubejit.ir.types import SCALARS, Kind, Scalar, bool_, f32, i64, u64
from cubejit.lang.folding import (
    float_binary,
    float_math,
    float_to_int,
    int_binary,
    int_unary,
    wrap_int,
)
from cubejit.lang.intrinsics import MathMarker
from cubejit.lang.source import Problem, Spelling
from cubejit.lang.values import Literal, Scalarish, coerce, unify

ARITHMETIC = frozenset(
    (BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.FLOORDIV, BinaryOp.MOD, BinaryOp.POW)
)
BITWISE = frozenset((BinaryOp.BITAND, BinaryOp.BITOR, BinaryOp.BITXOR))
SHIFTS = frozenset((BinaryOp.SHL, BinaryOp.SHR))


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
    """Two constants combined as the generated code would combine them (see
    :mod:`~cubejit.lang.folding`): a float operand makes it a float operation, computed in
    ``f32`` until the constant meets a type of its own."""
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
    if isinstance(a, float) or isinstance(b, float):
        result = float_binary(op, lhs.float_in(f32), rhs.float_in(f32), f32)
        return Literal(result, None if isinstance(result, bool) else (op, (lhs, rhs)))
    if not numeric:
        return Literal(a == b if op is BinaryOp.EQ else a != b)
    result = int_binary(op, int(a), int(b), text)
    return Literal(result, None if isinstance(result, bool) else (op, (lhs, rhs)))


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
    elif op.is_comparison and _mixed_signs(lhs, rhs):
        return _exact_comparison(op, lhs, rhs)  # type: ignore[arg-type]
    else:
        a, b = unify([lhs, rhs], text.quote())
    _check_operands(op, a.type, b.type, text)
    return Binary(op, a, b, bool_ if op.is_comparison else a.type)


def _mixed_signs(lhs: Scalarish, rhs: Scalarish) -> bool:
    """Whether a comparison is between a signed and an unsigned integer (both typed)."""
    if isinstance(lhs, Literal) or isinstance(rhs, Literal):
        return False
    return {lhs.type.kind, rhs.type.kind} == {Kind.INT, Kind.UINT}


def _exact_comparison(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr:
    """A signed and an unsigned integer compared by their values: both widened to ``i64``,
    or, when one is 64 bits wide, a negative signed side decides alone and the others compare
    as ``u64``."""
    if max(lhs.type.bits, rhs.type.bits) < 64:
        return Binary(op, _widen(lhs, i64), _widen(rhs, i64), bool_)
    signed = lhs if lhs.type.kind is Kind.INT else rhs
    signed_is_less = op in (BinaryOp.LT, BinaryOp.LE, BinaryOp.NE)
    signed_is_more = op in (BinaryOp.GT, BinaryOp.GE, BinaryOp.NE)
    when_negative = signed_is_less if signed is lhs else signed_is_more
    negative = Binary(BinaryOp.LT, signed, Const(0, signed.type), bool_)
    unsigned = Binary(op, _widen(lhs, u64), _widen(rhs, u64), bool_)
    return Select(negative, Const(when_negative, bool_), unsigned, bool_)


def _widen(value: Expr, t: Scalar) -> Expr:
    return value if value.type == t else Cast(value, t)


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
        if op is UnaryOp.NOT:
            return Literal(not v)
        if isinstance(v, float):
            return Literal(-operand.float_in(f32), (op, (operand,)))
        return Literal(int_unary(op, int(v), text), (op, (operand,)))
    return Unary(op, operand, operand.type)


def cast(value: Scalarish, t: Scalar, text: Spelling) -> Expr:
    """``cj.T(value)``: the language's conversion; a constant is converted now, as the
    generated code would convert it (an integer wraps, a float saturates, NaN gives 0)."""
    if not isinstance(value, Literal):
        return value if value.type == t else Cast(value, t)
    v = value.value
    if t.kind is Kind.BOOL:
        return Const(bool(v), t)
    if t.is_float:
        return Const(value.float_in(t), t)
    if isinstance(v, float):
        return Const(float_to_int(v, t), t)
    return Const(wrap_int(int(v), t), t)


def bitcast(value: Scalarish, t: Scalar, text: Spelling) -> Expr:
    """``cj.bitcast(value, T)``: the bits of a typed value (a constant takes the type of
    ``T``'s width: an integer constant the signed one, a float constant the float)."""
    if t.kind is Kind.BOOL:
        raise Problem(f"cj.bitcast does not take bools, in `{text}`")
    if isinstance(value, Literal):
        if isinstance(value.value, bool):
            raise Problem(f"cj.bitcast does not take bools, in `{text}`")
        kind = "f" if isinstance(value.value, float) else "i"
        source = SCALARS.get(f"{kind}{t.bits}")
        if source is None:
            raise Problem(f"`{text}`: a constant has no type {t.bits} bits wide; cast it first")
        value = coerce(value, source, text.quote())
    if value.type.kind is Kind.BOOL:
        raise Problem(f"cj.bitcast does not take bools, in `{text}`")
    if value.type.bits != t.bits:
        raise Problem(
            f"cj.bitcast keeps the width: {value.type} ({value.type.bits} bits) cannot be read "
            f"as {t} ({t.bits} bits), in `{text}`"
        )
    return value if value.type == t else Bitcast(value, t)


def math_call(marker: MathMarker, args: list[Scalarish], text: Spelling) -> Scalarish:
    """A call of ``cj.sqrt`` and friends (or Python's abs/min/max)."""
    name = marker.fn.value
    if marker.arity == -1:
        if len(args) < 2:
            raise Problem(f"`{name}` takes two or more arguments in `{text}`")
    elif len(args) != marker.arity:
        raise Problem(f"`{name}` takes {marker.arity} argument(s), got {len(args)}, in `{text}`")
    if all(isinstance(a, Literal) for a in args):
        return _fold_math(marker, args, text)  # type: ignore[arg-type]
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


def _fold_math(marker: MathMarker, args: list[Literal], text: Spelling) -> Literal:
    """A math call on constants: exact on integers (abs, min, max), else a float computed as
    the generated code computes it."""
    values = [a.value for a in args]
    if any(isinstance(v, bool) for v in values):
        raise Problem(f"`{marker.fn.value}` takes numbers, not bools, in `{text}`")
    if marker.takes_ints and all(isinstance(v, int) for v in values):
        ints = [int(v) for v in values]
        return Literal(builtins.abs(ints[0]) if marker.arity == 1 else _pick(marker.fn, ints))
    if marker.arity != -1:
        value = float_math(marker.fn, [a.float_in(f32) for a in args], f32)
        return Literal(value, (marker.fn, tuple(args)))
    result = args[0]
    for arg in args[1:]:
        value = float_math(marker.fn, [result.float_in(f32), arg.float_in(f32)], f32)
        result = Literal(value, (marker.fn, (result, arg)))
    return result


def _pick(fn: MathFn, values: list[int]) -> int:
    return builtins.min(values) if fn is MathFn.MIN else builtins.max(values)
