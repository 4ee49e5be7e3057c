"""What a kernel expression translates to, and how untyped constants get their type.

An expression becomes one of:

- an IR expression (typed: it has a :class:`~cubejit.ir.types.Scalar` ``type``);
- a :class:`Literal`, a Python constant with no type yet: a literal of the source, a comptime
  value, a ``cj.unroll`` index, or a constant folded from those. It takes the type of the other
  operand, or, alone, ``i32`` / ``f32`` / ``bool``;
- an :class:`ArrayRef`, an array or tensor parameter (only indexed, measured or passed on);
- a :class:`LineValue`, a line (an element of a ``cj.Line[T]`` buffer, or ``cj.line(v, n)``):
  one value per lane, each computed lane by lane;
- a :class:`PyObject`, a Python object the language gives a meaning to where it is used
  (``cj.f32`` when called, ``range`` in a ``for``, a ``@cj.function``, a module).
"""

from __future__ import annotations

from dataclasses import dataclass

from cubejit.ir.nodes import BinaryOp, Const, Expr, MathFn, UnaryOp
from cubejit.ir.traits import reads_memory
from cubejit.ir.types import BufferType, Kind, Scalar, bool_, f32, i32, round_float
from cubejit.lang.folding import float_binary, float_math, typed_int_binary, wrap_int
from cubejit.lang.source import Problem, Spelling


@dataclass(frozen=True, slots=True)
class Literal:
    """A constant whose type the context decides.

    A number folded from other constants keeps how it was made (``recipe``), so that where it
    takes a type it is computed in that type, as the same expression would be at run time:
    ``x * (1.0 / 3.0)`` with an ``f64`` ``x`` divides in ``f64``, and ``N * 2`` stored to an
    ``i32`` wraps as an ``i32`` multiplication would.
    """

    value: bool | int | float
    """The value: a float as ``f32`` computes it, an integer exactly."""
    recipe: tuple[BinaryOp | UnaryOp | MathFn, tuple[Literal, ...]] | None = None
    """For a number folded from other constants: the operation and its operands."""

    def float_in(self, t: Scalar) -> float:
        """The value as the float type ``t`` computes it."""
        if self.recipe is None:
            return round_float(float(self.value), t)
        op, args = self.recipe
        values = [a.float_in(t) for a in args]
        if isinstance(op, BinaryOp):
            return float(float_binary(op, values[0], values[1], t))
        if isinstance(op, UnaryOp):
            return -values[0]
        return float_math(op, values, t)

    def int_in(self, t: Scalar) -> int:
        """The value as the integer type ``t`` computes it; a constant written in the source
        must fit ``t`` (a :class:`Problem` otherwise), a computed one wraps."""
        if self.recipe is None:
            return int(const_of(self, t).value)
        op, args = self.recipe
        values = [a.int_in(t) for a in args]
        if isinstance(op, UnaryOp):
            return wrap_int(-values[0] if op is UnaryOp.NEG else ~values[0], t)
        assert isinstance(op, BinaryOp)
        return typed_int_binary(op, values[0], values[1], t)


@dataclass(frozen=True, slots=True)
class ArrayRef:
    """An array or tensor parameter (a tensor's type has its rank), or a buffer the kernel
    allocated, by its IR name."""

    name: str
    type: BufferType
    length: int | None = None
    """An allocated buffer's (comptime) size; None for a parameter, whose length is known at
    launch."""


@dataclass(frozen=True, slots=True)
class PyObject:
    """A Python object named by the kernel; ``spelling`` is how the source wrote it."""

    obj: object
    spelling: str


Scalarish = Expr | Literal
"""A value that is a single number or bool."""


@dataclass(frozen=True, slots=True)
class LineValue:
    """A line: one scalar per lane, all of one type. The kernel's IR has no line values; a line
    is translated lane by lane, its lanes adjacent elements of a buffer, which the C compiler
    and NVRTC load and store as one vector."""

    lanes: tuple[Scalarish, ...]

    @property
    def width(self) -> int:
        return len(self.lanes)


Value = Expr | Literal | ArrayRef | PyObject | LineValue


class TypeMix(Problem):
    """Two types met where one is needed. ``wanted`` pairs each typed value with a type it
    would have had to be, so the translator may retype a local that was first assigned a bare
    literal (see :class:`~cubejit.lang.builder.Builder`) instead of reporting the mix."""

    def __init__(self, message: str, wanted: list[tuple[Expr, Scalar]]) -> None:
        super().__init__(message)
        self.wanted = wanted


def default_type(value: bool | int | float) -> Scalar:
    """The type of a constant used alone: ``bool``, ``i32`` or ``f32``."""
    if isinstance(value, bool):
        return bool_
    return i32 if isinstance(value, int) else f32


def describe(value: Scalarish) -> str:
    """A value's type as messages name it."""
    if isinstance(value, Literal):
        kind = type(value.value).__name__
        return f"the {kind} constant {value.value!r}"
    return str(value.type)


def int_range(t: Scalar) -> tuple[int, int]:
    """The values an integer type holds."""
    if t.kind is Kind.UINT:
        return 0, (1 << t.bits) - 1
    return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1


def const_of(literal: Literal, t: Scalar) -> Const:
    """``literal`` as a constant of ``t``, or a :class:`Problem` saying why it cannot be one."""
    value = literal.value
    if t.kind is Kind.BOOL:
        if isinstance(value, bool):
            return Const(value, t)
        raise Problem(
            f"the constant {value!r} is used where a bool is expected; "
            f"write a comparison or True/False"
        )
    if isinstance(value, bool):
        raise Problem(
            f"the bool {value!r} is used where a {t} is expected; "
            f"cast it with cj.{t}(...) if that is meant"
        )
    if t.is_float:
        return Const(float(value) if literal.recipe is None else literal.float_in(t), t)
    if isinstance(value, float):
        raise Problem(
            f"the float constant {value!r} cannot be an integer ({t}); write an integer "
            f"constant, or cast the other operand to a float, e.g. cj.f32(...)"
        )
    if literal.recipe is not None:
        return Const(literal.int_in(t), t)
    low, high = int_range(t)
    if not low <= value <= high:
        raise Problem(
            f"the constant {value} does not fit in {t} ({low} to {high}); "
            f"cast the other operand to a wider type, e.g. cj.i64(...)"
        )
    return Const(value, t)


def typed(value: Scalarish) -> Expr:
    """``value`` with a type: a literal gets its default one."""
    if isinstance(value, Literal):
        return const_of(value, default_type(value.value))
    return value


def coerce(value: Scalarish, t: Scalar, what: str | Spelling) -> Expr:
    """``value`` where a ``t`` is required (``what`` names the place in messages): a literal
    becomes a constant of ``t``; a typed value must already be a ``t`` (no silent conversion)."""
    if isinstance(value, Literal):
        return const_of(value, t)
    if value.type != t:
        raise TypeMix(
            f"{what} is {t} but the value is {value.type}; cast it explicitly: cj.{t}(...)",
            [(value, t)],
        )
    return value


def unify(values: list[Scalarish], what: str | Spelling) -> list[Expr]:
    """Gives ``values`` one type: that of the typed ones (which must agree), literals adopting
    it; all literals take the type of the first float (``f32``) or else the default."""
    typed_values = [v for v in values if not isinstance(v, Literal)]
    if typed_values:
        t = typed_values[0].type
        for other in typed_values[1:]:
            if other.type != t:
                raise TypeMix(
                    f"{what} mixes {t} and {other.type}; cubejit never converts "
                    f"silently: cast one side, e.g. cj.{t}(...) or cj.{other.type}(...)",
                    [(v, u.type) for v in typed_values for u in typed_values if u.type != v.type],
                )
    else:
        consts = [v.value for v in values if isinstance(v, Literal)]
        t = next((f32 for c in consts if isinstance(c, float)), default_type(consts[0]))
    return [coerce(v, t, what) for v in values]


def contains_load(expr: Expr) -> bool:
    """Whether evaluating ``expr`` reads an array (so its value may change when code runs),
    as the IR's traits say."""
    return reads_memory(expr)


def exact_in(literal: Literal, t: Scalar) -> bool:
    """Whether the constant ``literal`` means the same value as a ``t`` (a float constant is
    never an integer, and a bool is only a bool)."""
    v = literal.value
    if isinstance(v, bool) or t.kind is Kind.BOOL:
        return False
    if t.is_float:
        return round_float(float(v), t) == v
    if isinstance(v, float):
        return False
    low, high = int_range(t)
    return low <= v <= high
