"""The IR: what a kernel means, typed and structured, with no Python left in it.

A kernel is a :class:`KernelIR`: parameters, the locals it declares (each with the one type its
first assignment gave it) and a body of statements. Control flow is structured — ``If``,
``RangeFor``, ``While`` with ``Break``/``Continue``/``Return`` — never a goto, so every backend
emits it with its own ``if``/``for``/``while``. Nodes are frozen; children are tuples. Names of
parameters and locals are unique within a kernel and are valid Python identifiers; a backend
decorates them as its language needs.

Semantics a backend must keep (they are the language's, see LANGUAGE.md):

- ``FLOORDIV`` and ``MOD`` on signed integers and floats round towards negative infinity, as
  Python and numpy do; on unsigned integers they are C's ``/`` and ``%``.
- ``DIV`` is true division and only ever appears on floats.
- Integer arithmetic wraps, signed too; ``SHR`` on a signed integer is arithmetic; a shift by
  the width or more (or a negative count) gives 0, or -1 for a negative shifted right.
- A float converted to an integer (``Cast``) truncates and saturates, NaN giving 0.
- ``AND`` and ``OR`` take bools and short-circuit.
- ``Return`` ends the current unit only.
- ``RangeFor`` evaluates ``stop`` and ``step`` once, before the first iteration, and runs while
  ``var < stop`` for a positive step, ``var > stop`` for a negative one.

The IR is valid when :func:`cubejit.ir.validate.validate` accepts it; the frontend hands on
only valid IR and a pass must leave it valid.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from cubejit.ir.types import ArrayType, BufferType, Scalar, TensorType, Type, u32


class PositionKind(enum.Enum):
    """What a position counts; with an :class:`Axis` (or none, flattened) it makes a
    :class:`Position`."""

    ABSOLUTE_POS = "ABSOLUTE_POS"
    """The unit within the whole launch."""
    UNIT_POS = "UNIT_POS"
    """The unit within its cube."""
    CUBE_POS = "CUBE_POS"
    """The unit's cube within the launch."""
    CUBE_DIM = "CUBE_DIM"
    """Units per cube."""
    CUBE_COUNT = "CUBE_COUNT"
    """Cubes in the launch."""
    PLANE_DIM = "PLANE_DIM"
    """Units per plane (the target's, fixed when the kernel is compiled for it)."""
    UNIT_POS_PLANE = "UNIT_POS_PLANE"
    """The unit's lane within its plane."""


class Axis(enum.IntEnum):
    """An axis of a launch; its value indexes ``cube_dim`` and ``cube_count``."""

    X = 0
    Y = 1
    Z = 2


class Position(enum.Enum):
    """A unit's place in a launch: a ``(kind, axis)`` pair, ``axis`` None for the flattened
    form. Every position is a ``u32``. Passes and emitters read :attr:`kind` and :attr:`axis`;
    the member's name is only its spelling in kernels and in the printed IR.

    ``ABSOLUTE_POS`` flattens x fastest: ``x + y * (CUBE_COUNT_X * CUBE_DIM_X) + z *
    (CUBE_COUNT_X * CUBE_DIM_X) * (CUBE_COUNT_Y * CUBE_DIM_Y)``; ``UNIT_POS`` and ``CUBE_POS``
    flatten the same way within their own extents; ``CUBE_DIM`` and ``CUBE_COUNT`` are products.
    """

    kind: PositionKind
    axis: Axis | None

    ABSOLUTE_POS = (PositionKind.ABSOLUTE_POS, None)
    ABSOLUTE_POS_X = (PositionKind.ABSOLUTE_POS, Axis.X)
    ABSOLUTE_POS_Y = (PositionKind.ABSOLUTE_POS, Axis.Y)
    ABSOLUTE_POS_Z = (PositionKind.ABSOLUTE_POS, Axis.Z)
    UNIT_POS = (PositionKind.UNIT_POS, None)
    UNIT_POS_X = (PositionKind.UNIT_POS, Axis.X)
    UNIT_POS_Y = (PositionKind.UNIT_POS, Axis.Y)
    UNIT_POS_Z = (PositionKind.UNIT_POS, Axis.Z)
    CUBE_POS = (PositionKind.CUBE_POS, None)
    CUBE_POS_X = (PositionKind.CUBE_POS, Axis.X)
    CUBE_POS_Y = (PositionKind.CUBE_POS, Axis.Y)
    CUBE_POS_Z = (PositionKind.CUBE_POS, Axis.Z)
    CUBE_DIM = (PositionKind.CUBE_DIM, None)
    CUBE_DIM_X = (PositionKind.CUBE_DIM, Axis.X)
    CUBE_DIM_Y = (PositionKind.CUBE_DIM, Axis.Y)
    CUBE_DIM_Z = (PositionKind.CUBE_DIM, Axis.Z)
    CUBE_COUNT = (PositionKind.CUBE_COUNT, None)
    CUBE_COUNT_X = (PositionKind.CUBE_COUNT, Axis.X)
    CUBE_COUNT_Y = (PositionKind.CUBE_COUNT, Axis.Y)
    CUBE_COUNT_Z = (PositionKind.CUBE_COUNT, Axis.Z)
    PLANE_DIM = (PositionKind.PLANE_DIM, None)
    UNIT_POS_PLANE = (PositionKind.UNIT_POS_PLANE, None)

    def __init__(self, kind: PositionKind, axis: Axis | None) -> None:
        self.kind = kind
        self.axis = axis

    @classmethod
    def of(cls, kind: PositionKind, axis: Axis | None = None) -> Position:
        """The position counting ``kind`` along ``axis`` (None: flattened)."""
        return next(p for p in cls if p.kind is kind and p.axis == axis)


class UnaryOp(enum.Enum):
    NEG = "neg"
    """Arithmetic negation of a number (wraps on unsigned)."""
    NOT = "not"
    """Logical negation of a bool."""
    INVERT = "invert"
    """Bitwise complement of an integer."""


class BinaryOp(enum.Enum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    """True division, floats only."""
    FLOORDIV = "floordiv"
    MOD = "mod"
    POW = "pow"
    """Power; on integers a non-negative integer exponent (a negative one gives 0, or 1/±1)."""
    BITAND = "bitand"
    BITOR = "bitor"
    BITXOR = "bitxor"
    SHL = "shl"
    SHR = "shr"
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    AND = "and"
    OR = "or"

    @property
    def is_comparison(self) -> bool:
        return self in _COMPARISONS

    @property
    def is_logical(self) -> bool:
        return self in (BinaryOp.AND, BinaryOp.OR)

    @property
    def symbol(self) -> str:
        """The operator as Python spells it (``+``, ``//``, ``and``): what the printed IR and
        the frontend's error messages show."""
        return _SYMBOLS[self]


_COMPARISONS = frozenset(
    (BinaryOp.EQ, BinaryOp.NE, BinaryOp.LT, BinaryOp.LE, BinaryOp.GT, BinaryOp.GE)
)

_SYMBOLS = {
    BinaryOp.ADD: "+",
    BinaryOp.SUB: "-",
    BinaryOp.MUL: "*",
    BinaryOp.DIV: "/",
    BinaryOp.FLOORDIV: "//",
    BinaryOp.MOD: "%",
    BinaryOp.POW: "**",
    BinaryOp.BITAND: "&",
    BinaryOp.BITOR: "|",
    BinaryOp.BITXOR: "^",
    BinaryOp.SHL: "<<",
    BinaryOp.SHR: ">>",
    BinaryOp.EQ: "==",
    BinaryOp.NE: "!=",
    BinaryOp.LT: "<",
    BinaryOp.LE: "<=",
    BinaryOp.GT: ">",
    BinaryOp.GE: ">=",
    BinaryOp.AND: "and",
    BinaryOp.OR: "or",
}


class MathFn(enum.Enum):
    """A math function; operands and result share one type (floats, except ABS/MIN/MAX which
    also take integers). ``FMA(a, b, c)`` is ``a * b + c`` rounded once. ``MIN`` and ``MAX``
    of floats ignore a NaN operand (C's ``fmin``/``fmax``: NaN only when both are NaN);
    ``ROUND`` rounds half to even (Python's ``round``, numpy's ``rint``)."""

    SQRT = "sqrt"
    EXP = "exp"
    LOG = "log"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    TANH = "tanh"
    ERF = "erf"
    FLOOR = "floor"
    CEIL = "ceil"
    ABS = "abs"
    MIN = "min"
    MAX = "max"
    POW = "pow"
    FMA = "fma"
    ATAN2 = "atan2"
    ASIN = "asin"
    ACOS = "acos"
    ATAN = "atan"
    SINH = "sinh"
    COSH = "cosh"
    ASINH = "asinh"
    ACOSH = "acosh"
    ATANH = "atanh"
    ROUND = "round"
    TRUNC = "trunc"
    EXP2 = "exp2"
    LOG2 = "log2"
    HYPOT = "hypot"


# Expressions. Every expression has ``type``, the scalar it evaluates to; none has an effect.


@dataclass(frozen=True, slots=True)
class Const:
    """A literal of ``type``: a bool for bool, an int for integers, a float for floats."""

    value: bool | int | float
    type: Scalar


@dataclass(frozen=True, slots=True)
class Var:
    """The current value of a scalar parameter or a local named ``name``."""

    name: str
    type: Scalar


@dataclass(frozen=True, slots=True)
class PositionOf:
    """A position of the running unit; always ``u32``."""

    which: Position
    type: Scalar = u32


@dataclass(frozen=True, slots=True)
class Length:
    """The number of elements of the array or tensor parameter ``array``; ``u32`` (a launch
    refuses a buffer of ``2**32`` elements or more)."""

    array: str
    type: Scalar = u32


@dataclass(frozen=True, slots=True)
class Shape:
    """The extent of tensor parameter ``tensor`` along ``dim`` (``0 <= dim < rank``); ``u32``."""

    tensor: str
    dim: int
    type: Scalar = u32


@dataclass(frozen=True, slots=True)
class Stride:
    """The stride, in elements, of tensor parameter ``tensor`` along ``dim``; ``u32``, never
    negative (a launch refuses negative strides), zero along a broadcast dimension."""

    tensor: str
    dim: int
    type: Scalar = u32


@dataclass(frozen=True, slots=True)
class TensorIndex:
    """The offset, in elements, of the element of tensor ``tensor`` at coordinates ``indices``
    (one integer per dimension): the sum of each index times its stride. A launch refuses a
    tensor whose last element lies ``2**32`` elements or more past its first, so the offset of
    every element in bounds is exact in ``u32``; an emitter may compute it wider (the C backend
    does, in 64 bits, so that it stays affine in a loop counter)."""

    tensor: str
    indices: tuple[Expr, ...]
    type: Scalar = u32


@dataclass(frozen=True, slots=True)
class Load:
    """``array[index]``; ``index`` is an integer, ``type`` the array's element type. For a
    tensor ``array``, ``index`` is a :class:`TensorIndex` of that tensor."""

    array: str
    index: Expr
    type: Scalar
    where: str = field(default="", compare=False)
    """``file:line`` of the access in the kernel's source, for messages (a checked launch's
    :class:`LaunchError`); never part of the node's equality or of any emitted text."""


@dataclass(frozen=True, slots=True)
class Unary:
    op: UnaryOp
    operand: Expr
    type: Scalar


@dataclass(frozen=True, slots=True)
class Binary:
    """``lhs op rhs``. Both operands have one type (except the right of a shift, any integer,
    and of an integer POW, any integer); ``type`` is theirs, or bool for comparisons."""

    op: BinaryOp
    lhs: Expr
    rhs: Expr
    type: Scalar


@dataclass(frozen=True, slots=True)
class Cast:
    """``value`` converted to ``type`` (C's conversion; to bool means ``!= 0``)."""

    value: Expr
    type: Scalar


@dataclass(frozen=True, slots=True)
class Bitcast:
    """The bits of ``value`` read as ``type``, a scalar of the same width (never bool)."""

    value: Expr
    type: Scalar


@dataclass(frozen=True, slots=True)
class Math:
    fn: MathFn
    args: tuple[Expr, ...]
    type: Scalar


@dataclass(frozen=True, slots=True)
class Select:
    """``if_true`` when ``cond`` holds, else ``if_false``; only the one chosen is evaluated."""

    cond: Expr
    if_true: Expr
    if_false: Expr
    type: Scalar


Expr = (
    Const
    | Var
    | PositionOf
    | Length
    | Shape
    | Stride
    | TensorIndex
    | Load
    | Unary
    | Binary
    | Cast
    | Bitcast
    | Math
    | Select
)


# Statements.


@dataclass(frozen=True, slots=True)
class Assign:
    """Gives the local or scalar parameter ``name`` the value of ``value`` (same type)."""

    name: str
    value: Expr


@dataclass(frozen=True, slots=True)
class Store:
    """``array[index] = value``; ``value`` has the array's element type (``index`` as for
    :class:`Load`)."""

    array: str
    index: Expr
    value: Expr
    where: str = field(default="", compare=False)
    """As :attr:`Load.where`."""


@dataclass(frozen=True, slots=True)
class If:
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()


@dataclass(frozen=True, slots=True)
class RangeFor:
    """Python's ``for var in range(start, stop, step)`` over integers of ``var``'s type;
    ``step`` is never zero."""

    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class While:
    cond: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class Break:
    """Leaves the innermost loop."""


@dataclass(frozen=True, slots=True)
class Continue:
    """Starts the innermost loop's next iteration."""


@dataclass(frozen=True, slots=True)
class Return:
    """Ends the running unit."""


class AtomicOp(enum.Enum):
    """An operation on one element of an atomic buffer; each but ``STORE`` gives the value the
    element held before it. Memory order is relaxed."""

    LOAD = "load"
    STORE = "store"
    ADD = "fetch_add"
    SUB = "fetch_sub"
    MAX = "fetch_max"
    MIN = "fetch_min"
    EXCHANGE = "exchange"
    COMPARE_EXCHANGE = "compare_exchange"
    """Writes ``value`` where the element equals ``compare``."""
    AND = "fetch_and"
    """Integers only, as ``OR`` and ``XOR``."""
    OR = "fetch_or"
    XOR = "fetch_xor"

    @property
    def operands(self) -> int:
        """Values it takes besides the element: 0 for a load, 2 for compare-exchange."""
        if self is AtomicOp.LOAD:
            return 0
        return 2 if self is AtomicOp.COMPARE_EXCHANGE else 1


INT_ATOMICS = frozenset((AtomicOp.AND, AtomicOp.OR, AtomicOp.XOR))
"""Atomic operations defined on integers only."""


@dataclass(frozen=True, slots=True)
class Atomic:
    """``result = array[index].op(*args)`` done atomically on an element of the atomic buffer
    ``array`` (a parameter or shared memory). ``args`` are the operands in the language's
    order (``compare_exchange(current, new)``), of the element type; ``result`` is a local of
    that type, None for ``STORE`` only."""

    op: AtomicOp
    array: str
    index: Expr
    args: tuple[Expr, ...]
    result: str | None
    where: str = field(default="", compare=False)
    """As :attr:`Load.where`."""


@dataclass(frozen=True, slots=True)
class SyncCube:
    """Every unit of the cube waits here for all; shared and global writes made before it are
    seen by the cube after it. ``where`` (``file:line``) is for messages only."""

    where: str = ""


@dataclass(frozen=True, slots=True)
class SyncPlane:
    """The same as :class:`SyncCube` for the units of one plane."""

    where: str = ""


class PlaneFn(enum.Enum):
    """A plane operation. Reductions and scans take a number (``ALL``/``ANY`` a bool); the
    exchanges take a value and a ``u32`` lane, mask or delta; ``ELECT`` takes nothing and
    gives a bool, ``BALLOT`` a bool and gives a ``u32`` mask (lane k in bit k)."""

    SUM = "plane_sum"
    PROD = "plane_prod"
    MAX = "plane_max"
    MIN = "plane_min"
    ALL = "plane_all"
    ANY = "plane_any"
    INCLUSIVE_SUM = "plane_inclusive_sum"
    EXCLUSIVE_SUM = "plane_exclusive_sum"
    INCLUSIVE_PROD = "plane_inclusive_prod"
    EXCLUSIVE_PROD = "plane_exclusive_prod"
    BROADCAST = "plane_broadcast"
    SHUFFLE = "plane_shuffle"
    SHUFFLE_XOR = "plane_shuffle_xor"
    SHUFFLE_UP = "plane_shuffle_up"
    SHUFFLE_DOWN = "plane_shuffle_down"
    ELECT = "plane_elect"
    BALLOT = "plane_ballot"

    @property
    def arity(self) -> int:
        if self is PlaneFn.ELECT:
            return 0
        return 2 if self in PLANE_EXCHANGES else 1

    @property
    def is_plane_uniform(self) -> bool:
        """Whether every lane gets the same result (a reduction, broadcast or ballot)."""
        return self in _PLANE_UNIFORM


PLANE_EXCHANGES = frozenset(
    (
        PlaneFn.BROADCAST,
        PlaneFn.SHUFFLE,
        PlaneFn.SHUFFLE_XOR,
        PlaneFn.SHUFFLE_UP,
        PlaneFn.SHUFFLE_DOWN,
    )
)
"""Plane operations taking a value and a lane (or mask, or delta)."""

_PLANE_UNIFORM = frozenset(
    (
        PlaneFn.SUM,
        PlaneFn.PROD,
        PlaneFn.MAX,
        PlaneFn.MIN,
        PlaneFn.ALL,
        PlaneFn.ANY,
        PlaneFn.BROADCAST,
        PlaneFn.BALLOT,
    )
)


@dataclass(frozen=True, slots=True)
class PlaneOp:
    """``result = fn(*args)`` computed by the units of a plane together; every lane of the
    plane must reach it. ``where`` (``file:line``) is for messages only."""

    fn: PlaneFn
    result: str
    args: tuple[Expr, ...]
    where: str = ""


@dataclass(frozen=True, slots=True)
class Print:
    """Writes one line to the process's output: ``text[0]``, ``args[0]``, ``text[1]``, ...,
    ``text[-1]``, then a newline (``len(text) == len(args) + 1``). Each unit that runs it
    writes its own whole line; lines of different units never mix, in an order the language
    leaves open. Integers print in decimal, bools as ``True``/``False``, floats as C's ``%g``.
    ``where`` (``file:line``) is for messages only."""

    text: tuple[str, ...]
    args: tuple[Expr, ...]
    where: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class BoundsFailure:
    """Records an access out of bounds as the launch's failure, when it is the first: check
    site ``site`` (numbered by :func:`cubejit.ir.bounds.checked`), the ``index`` (``i64``) and
    the ``length`` (``i64``). Only a checked variant holds it, followed by a ``Return``."""

    site: int
    index: Expr
    length: Expr


Stmt = (
    Assign
    | Store
    | If
    | RangeFor
    | While
    | Break
    | Continue
    | Return
    | Atomic
    | SyncCube
    | SyncPlane
    | PlaneOp
    | Print
    | BoundsFailure
)


# The kernel.


class BufferKind(enum.Enum):
    """Where a buffer the kernel declares lives."""

    SHARED = "shared"
    """One per cube (``cj.SharedMemory``)."""
    LOCAL = "local"
    """One per unit (``cj.LocalArray``)."""


@dataclass(frozen=True, slots=True)
class Buffer:
    """A buffer the kernel declares: ``size`` elements of ``elem``, uninitialised. Loads,
    stores and atomics name it as they name an array parameter; its length is the constant
    ``size`` (sizes are comptime, so the frontend folds ``s.len()``)."""

    name: str
    kind: BufferKind
    elem: Scalar
    size: int
    """Elements; at least 1."""
    atomic: bool = False
    """Whether its elements are ``cj.Atomic[elem]``."""

    @property
    def bytes(self) -> int:
        return self.size * self.elem.itemsize


@dataclass(frozen=True, slots=True)
class Param:
    """A launch argument: a scalar passed by value, or an array or tensor passed as a buffer."""

    name: str
    type: Type


@dataclass(frozen=True, slots=True)
class Local:
    """A local variable; declared once for the whole kernel with the type of its first
    assignment, so a backend may declare every local at the top of the unit."""

    name: str
    type: Scalar


@dataclass(frozen=True, slots=True)
class KernelIR:
    """One kernel, specialised: comptime values are folded in, ``@cj.function`` calls
    inlined, unrolled loops expanded."""

    name: str
    """The kernel's qualified Python name (for messages and the printed form)."""
    params: tuple[Param, ...]
    """Launch arguments in signature order, comptime parameters excluded."""
    locals: tuple[Local, ...]
    """Every local the body assigns, in order of first assignment."""
    body: tuple[Stmt, ...]
    allocations: tuple[Buffer, ...] = ()
    """Shared memory and local arrays the body uses, in order of declaration."""

    def arrays(self) -> tuple[Param, ...]:
        """The array parameters, in signature order."""
        return tuple(p for p in self.params if isinstance(p.type, ArrayType))

    def tensors(self) -> tuple[Param, ...]:
        """The tensor parameters, in signature order."""
        return tuple(p for p in self.params if isinstance(p.type, TensorType))

    def buffers(self) -> dict[str, BufferType]:
        """The type of each array and tensor parameter, by name."""
        return {p.name: p.type for p in self.params if isinstance(p.type, ArrayType | TensorType)}

    def shared_bytes(self) -> int:
        """Bytes of shared memory one cube holds, all its buffers together."""
        return sum(b.bytes for b in self.allocations if b.kind is BufferKind.SHARED)

    def has(self, kind: type) -> bool:
        """Whether a statement of kind ``kind`` appears anywhere in the body."""
        from cubejit.ir.traversal import walk_stmts

        return any(isinstance(s, kind) for s in walk_stmts(self.body))

    def __str__(self) -> str:
        from cubejit.ir.printer import print_kernel

        return print_kernel(self)
