"""Lines in the translator: a line's lanes computed one by one, scalars broadcast.

A ``cj.Line[T]`` buffer of ``n`` lanes per line holds its lines' lanes side by side, so lane
``k`` of line ``i`` is element ``i * n + k``; a line read from it is ``n`` loads of adjacent
elements, which the C compiler and NVRTC merge into one vector load (the launch chose ``n`` so
that every line is aligned to its size).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cubejit.ir.nodes import Binary, BinaryOp, Cast, Const, Expr
from cubejit.ir.types import Kind, i64, u64
from cubejit.lang.source import Problem
from cubejit.lang.values import LineValue, Literal, Scalarish, Value


def has_line(values: Sequence[Value]) -> bool:
    return any(isinstance(v, LineValue) for v in values)


def lanewise(fn: Callable[..., Scalarish], values: Sequence[Value], what: object) -> LineValue:
    """``fn`` applied lane by lane to ``values``: lines of one width, scalars broadcast to
    every lane."""
    widths = sorted({v.width for v in values if isinstance(v, LineValue)})
    if len(widths) > 1:
        raise Problem(
            f"{what} mixes lines of {widths[0]} and {widths[1]} lanes; lines combine lane by "
            f"lane, so their sizes must agree: pass the arguments lined alike "
            f"(cj.lined(x, n) at launch)"
        )
    for v in values:
        if not isinstance(v, LineValue | Literal) and not hasattr(v, "type"):
            raise Problem(f"{what} combines a line with something that is not a number")
    return LineValue(
        tuple(
            fn(*[v.lanes[k] if isinstance(v, LineValue) else v for v in values])
            for k in range(widths[0])
        )
    )


def lane_index(index: Expr, width: int, lane: int) -> Expr:
    """The element index of lane ``lane`` of line ``index`` in a buffer of ``width`` lanes per
    line, computed in 64 bits: exact without a wrap to prove, so that a C compiler sees the lanes
    of neighbouring units as one affine, interleaved access and vectorises across them."""
    if width == 1:
        return index
    t = index.type
    if t.bits < 64:
        t = u64 if t.kind is Kind.UINT else i64
        index = Cast(index, t)
    return Binary(BinaryOp.ADD, Binary(BinaryOp.MUL, index, Const(width, t), t), Const(lane, t), t)


def in_lines(elements: Expr, width: int) -> Expr:
    """A count of elements (``u32``) as a count of lines of ``width``."""
    if width == 1:
        return elements
    return Binary(BinaryOp.FLOORDIV, elements, Const(width, elements.type), elements.type)


def lane_number(value: Value, line: LineValue, what: object) -> int:
    """``value`` as a lane of ``line``: a constant int below its width."""
    if (
        not isinstance(value, Literal)
        or isinstance(value.value, bool)
        or not isinstance(value.value, int)
    ):
        raise Problem(
            f"the lane of {what} must be a constant int (a literal, a comptime value or a "
            f"cj.unroll index)"
        )
    if not 0 <= value.value < line.width:
        raise Problem(f"{what} reads lane {value.value} of a line of {line.width} lanes")
    return value.value
