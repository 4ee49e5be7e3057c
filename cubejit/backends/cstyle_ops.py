"""The operator tables of the C-family walker: how C spells each operator and math function of
the IR, and which integer operators it computes through an unsigned type.

Both C dialects spell these alike; a math function is named here by its ``double`` form, and
:meth:`~cubejit.backends.cstyle.Dialect.libm` gives each type its own (``sqrtf``).
"""

from __future__ import annotations

from cubejit.ir import nodes as ir

ARITH = {
    ir.BinaryOp.ADD: "+",
    ir.BinaryOp.SUB: "-",
    ir.BinaryOp.MUL: "*",
    ir.BinaryOp.DIV: "/",
    ir.BinaryOp.BITAND: "&",
    ir.BinaryOp.BITOR: "|",
    ir.BinaryOp.BITXOR: "^",
    ir.BinaryOp.SHL: "<<",
    ir.BinaryOp.SHR: ">>",
}
"""C's operator for each arithmetic and bit operator (``//``, ``%`` and ``**`` have helpers)."""
COMPARE = {
    ir.BinaryOp.EQ: "==",
    ir.BinaryOp.NE: "!=",
    ir.BinaryOp.LT: "<",
    ir.BinaryOp.LE: "<=",
    ir.BinaryOp.GT: ">",
    ir.BinaryOp.GE: ">=",
    ir.BinaryOp.AND: "&&",
    ir.BinaryOp.OR: "||",
}
"""C's operator for each comparison and logical operator (all give a bool)."""
FLOAT_MATH = {
    ir.MathFn.SQRT: "sqrt",
    ir.MathFn.EXP: "exp",
    ir.MathFn.LOG: "log",
    ir.MathFn.SIN: "sin",
    ir.MathFn.COS: "cos",
    ir.MathFn.TAN: "tan",
    ir.MathFn.TANH: "tanh",
    ir.MathFn.ERF: "erf",
    ir.MathFn.FLOOR: "floor",
    ir.MathFn.CEIL: "ceil",
    ir.MathFn.ABS: "fabs",
    ir.MathFn.MIN: "fmin",
    ir.MathFn.MAX: "fmax",
    ir.MathFn.POW: "pow",
    ir.MathFn.FMA: "fma",
    ir.MathFn.ATAN2: "atan2",
    ir.MathFn.ASIN: "asin",
    ir.MathFn.ACOS: "acos",
    ir.MathFn.ATAN: "atan",
    ir.MathFn.SINH: "sinh",
    ir.MathFn.COSH: "cosh",
    ir.MathFn.ASINH: "asinh",
    ir.MathFn.ACOSH: "acosh",
    ir.MathFn.ATANH: "atanh",
    ir.MathFn.ROUND: "rint",
    ir.MathFn.TRUNC: "trunc",
    ir.MathFn.EXP2: "exp2",
    ir.MathFn.LOG2: "log2",
    ir.MathFn.HYPOT: "hypot",
}
"""libm's name for each math function; ``ROUND`` is ``rint``, which rounds half to even."""
WRAPPING = frozenset((ir.BinaryOp.ADD, ir.BinaryOp.SUB, ir.BinaryOp.MUL))
"""Integer operators C computes in ``int`` (small types) or may not wrap (signed): computed
in an unsigned type and converted back, so every integer type wraps, as numpy's do."""
