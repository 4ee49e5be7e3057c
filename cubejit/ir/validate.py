"""The IR's rules, checked: what every backend may assume of the IR it is handed.

:func:`validate` checks the rules every kernel keeps, :func:`validate_for` what one target's
:class:`~cubejit.ir.capabilities.Capabilities` allow; each raises
:class:`~cubejit.errors.ValidationError` naming the kernel, the rule and the offending
statement (in the printed form). The frontend validates every kernel it
builds; a pass over the IR must leave it valid, and tests may validate after every step.
"""

from __future__ import annotations

import keyword
import math
from typing import NoReturn, assert_never

from cubejit.errors import ValidationError
from cubejit.ir.barriers import check_barrier_rule, check_cooperation
from cubejit.ir.capabilities import Capabilities
from cubejit.ir.nodes import (
    INT_ATOMICS,
    PLANE_EXCHANGES,
    Assign,
    Atomic,
    AtomicOp,
    Binary,
    BinaryOp,
    Bitcast,
    BoundsFailure,
    Break,
    Cast,
    Const,
    Continue,
    Expr,
    If,
    KernelIR,
    Length,
    Load,
    Math,
    MathFn,
    PlaneFn,
    PlaneOp,
    Position,
    PositionOf,
    Print,
    RangeFor,
    Return,
    Select,
    Shape,
    Stmt,
    Store,
    Stride,
    SyncCube,
    SyncPlane,
    TensorIndex,
    Unary,
    UnaryOp,
    Var,
    While,
)
from cubejit.ir.printer import print_expr, print_stmt
from cubejit.ir.traits import own_traits
from cubejit.ir.traversal import is_expr, is_stmt, walk_stmts
from cubejit.ir.types import ArrayType, BufferType, Kind, Scalar, TensorType, bool_, i64, u32
from cubejit.ir.values import declared

_ARITY = {
    MathFn.FMA: 3,
    MathFn.MIN: 2,
    MathFn.MAX: 2,
    MathFn.POW: 2,
    MathFn.ATAN2: 2,
    MathFn.HYPOT: 2,
}
_INT_MATH = frozenset((MathFn.ABS, MathFn.MIN, MathFn.MAX))
_NUMERIC_OPS = frozenset(
    (BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.FLOORDIV, BinaryOp.MOD)
)
_INT_OPS = frozenset((BinaryOp.BITAND, BinaryOp.BITOR, BinaryOp.BITXOR))
_SHIFTS = frozenset((BinaryOp.SHL, BinaryOp.SHR))


class _Invalid(Exception):
    pass


def validate(kernel: KernelIR) -> None:
    """Accepts ``kernel`` or raises :class:`~cubejit.errors.ValidationError`."""
    checker = _Checker(kernel)
    try:
        checker.check()
    except _Invalid as exc:
        raise ValidationError(
            f"kernel {kernel.name}: invalid IR: {exc}", kernel=kernel.name
        ) from None
    check_barrier_rule(kernel)


def _fail(message: str) -> NoReturn:
    raise _Invalid(message)


def _scalar(t: object, what: str) -> Scalar:
    if not isinstance(t, Scalar):
        _fail(f"{what} has type {t!r}, not a scalar")
    return t  # type: ignore[return-value]


def _check_name(name: object, what: str) -> None:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        _fail(f"{what} name {name!r} is not a valid identifier")


class _Checker:
    def __init__(self, kernel: KernelIR) -> None:
        self.kernel = kernel
        self.scalars: dict[str, Scalar] = {}
        """Names an Assign or Var may use: scalar parameters and locals."""
        self.arrays: dict[str, BufferType] = {}
        """Array and tensor parameters, and the buffers the kernel allocates."""
        self.allocated: set[str] = set()
        """Arrays the kernel allocates (shared memory, local arrays) rather than receives."""
        self.local_names: set[str] = set()
        self.assigned: set[str] = set()

    def check(self) -> None:
        seen: set[str] = set()
        for param in self.kernel.params:
            _check_name(param.name, "parameter")
            if param.name in seen:
                _fail(f"parameter {param.name} is declared twice")
            seen.add(param.name)
            if isinstance(param.type, ArrayType | TensorType):
                _scalar(param.type.elem, f"the elements of {param.name}")
                rank = getattr(param.type, "rank", 1)
                if not isinstance(rank, int) or isinstance(rank, bool) or rank < 1:
                    _fail(f"tensor {param.name} has rank {rank!r}, not an int of 1 or more")
                self.arrays[param.name] = param.type
            else:
                self.scalars[param.name] = _scalar(param.type, f"parameter {param.name}")
        for local in self.kernel.locals:
            _check_name(local.name, "local")
            if local.name in seen:
                _fail(f"local {local.name} is declared twice (or shares a parameter's name)")
            seen.add(local.name)
            self.scalars[local.name] = _scalar(local.type, f"local {local.name}")
            self.local_names.add(local.name)
        for buffer in self.kernel.allocations:
            _check_name(buffer.name, buffer.kind.value)
            if buffer.name in seen:
                _fail(f"{buffer.kind.value} buffer {buffer.name} shares another name")
            seen.add(buffer.name)
            _scalar(buffer.elem, f"the elements of {buffer.name}")
            if not isinstance(buffer.size, int) or buffer.size < 1:
                _fail(f"{buffer.name} has {buffer.size!r} elements; a buffer has at least 1")
            self.arrays[buffer.name] = ArrayType(buffer.elem, buffer.atomic)
            self.allocated.add(buffer.name)
        self.block(self.kernel.body, loops=0)
        for name in sorted(self.local_names - self.assigned):
            _fail(f"local {name} is declared but never assigned")

    def block(self, block: object, loops: int) -> None:
        if not isinstance(block, tuple):
            _fail(f"a block must be a tuple of statements, not {type(block).__name__}")
        for stmt in block:  # type: ignore[attr-defined]
            try:
                self.stmt(stmt, loops)
            except _Invalid as exc:
                if "\n  in: " in str(exc):
                    raise
                raise _Invalid(f"{exc}\n  in: {_brief(stmt)}") from None

    def target(self, name: str) -> Scalar:
        if name not in self.scalars:
            what = "an array" if name in self.arrays else "not declared"
            _fail(f"assignment to {name}, which is {what}")
        self.assigned.add(name)
        return self.scalars[name]

    def stmt(self, stmt: Stmt, loops: int) -> None:
        if not is_stmt(stmt):
            _fail(f"{stmt!r} is not a statement")
        if isinstance(stmt, Assign):
            declared = self.target(stmt.name)
            self.expect(stmt.value, declared, f"the value assigned to {stmt.name}")
        elif isinstance(stmt, Store):
            array = self.array(stmt.array)
            if _is_atomic(array):
                _fail(f"{stmt.array} holds atomics, written by an atomic store")
            self.buffer_index(stmt.array, stmt.index)
            self.expect(stmt.value, array.elem, f"the value stored into {stmt.array}")
        elif isinstance(stmt, If):
            self.expect(stmt.cond, bool_, "an if condition")
            self.block(stmt.then, loops)
            self.block(stmt.orelse, loops)
        elif isinstance(stmt, RangeFor):
            var = self.target(stmt.var)
            if not var.is_int:
                _fail(f"loop variable {stmt.var} is {var}, not an integer")
            for part, expr in (("start", stmt.start), ("stop", stmt.stop), ("step", stmt.step)):
                self.expect(expr, var, f"the range {part}")
            if isinstance(stmt.step, Const) and stmt.step.value == 0:
                _fail("a range step is zero")
            self.block(stmt.body, loops + 1)
        elif isinstance(stmt, While):
            self.expect(stmt.cond, bool_, "a while condition")
            self.block(stmt.body, loops + 1)
        elif isinstance(stmt, Break | Continue):
            if loops == 0:
                _fail(f"{type(stmt).__name__.lower()} outside a loop")
        elif isinstance(stmt, Atomic):
            self.atomic(stmt)
        elif isinstance(stmt, PlaneOp):
            self.plane(stmt)
        elif isinstance(stmt, Print):
            if len(stmt.text) != len(stmt.args) + 1 or not all(
                isinstance(t, str) for t in stmt.text
            ):
                _fail("a print has one text piece more than it has values")
            for arg in stmt.args:
                self.expr(arg)
        elif isinstance(stmt, BoundsFailure):
            self.expect(stmt.index, i64, "the index of a bounds failure")
            self.expect(stmt.length, i64, "the length of a bounds failure")
        elif not isinstance(stmt, Return | SyncCube | SyncPlane):
            assert_never(stmt)

    def atomic(self, stmt: Atomic) -> None:
        array = self.array(stmt.array)
        if not _is_atomic(array):
            _fail(f"{stmt.array} is not an array of atomics")
        elem = array.elem
        if not (elem.is_int or elem.is_float) or elem.bits not in (32, 64):
            _fail(f"atomics take 32- and 64-bit numbers, not {elem}")
        if stmt.op in INT_ATOMICS and not elem.is_int:
            _fail(f"{stmt.op.value} takes integers, not {elem}")
        self.buffer_index(stmt.array, stmt.index)
        if len(stmt.args) != stmt.op.operands:
            _fail(f"{stmt.op.value} takes {stmt.op.operands} value(s), not {len(stmt.args)}")
        for arg in stmt.args:
            self.expect(arg, elem, f"a value of {stmt.op.value}")
        if stmt.op is AtomicOp.STORE:
            if stmt.result is not None:
                _fail("an atomic store gives no value")
        elif stmt.result is None or self.target(stmt.result) != elem:
            _fail(f"the result of {stmt.op.value} is a local of type {elem}")

    def plane(self, stmt: PlaneOp) -> None:
        fn = stmt.fn
        if len(stmt.args) != fn.arity:
            _fail(f"{fn.value} takes {fn.arity} value(s), not {len(stmt.args)}")
        result = self.target(stmt.result)
        if fn is PlaneFn.ELECT:
            expected = bool_
        elif fn is PlaneFn.BALLOT:
            self.expect(stmt.args[0], bool_, f"the value of {fn.value}")
            expected = u32
        else:
            expected = self.expr(stmt.args[0])
            boolean = fn in (PlaneFn.ALL, PlaneFn.ANY)
            if boolean != (expected == bool_) and fn not in PLANE_EXCHANGES:
                _fail(f"{fn.value} does not take {expected}")
        if fn in PLANE_EXCHANGES:
            self.expect(stmt.args[1], u32, f"the lane of {fn.value}")
        if result != expected:
            _fail(f"the result of {fn.value} is {expected}, not {result}")

    def array(self, name: str) -> BufferType:
        if name not in self.arrays:
            _fail(f"{name} is not an array parameter nor a tensor parameter")
        return self.arrays[name]

    def tensor(self, name: str, dim: int | None = None) -> TensorType:
        t = self.arrays.get(name)
        if not isinstance(t, TensorType) or t.rank is None:
            _fail(f"{name} is not a tensor parameter")
        assert isinstance(t, TensorType) and t.rank is not None
        if dim is not None and (not isinstance(dim, int) or not 0 <= dim < t.rank):
            _fail(f"dimension {dim!r} of {name}, which has rank {t.rank}")
        return t

    def buffer_index(self, name: str, index: Expr) -> None:
        """A tensor is indexed by its own coordinates, an array by one integer."""
        if isinstance(self.array(name), TensorType) != (
            isinstance(index, TensorIndex) and index.tensor == name
        ):
            _fail(f"{name} is indexed by {print_expr(index)}")
        self.index(index)

    def index(self, expr: Expr) -> None:
        if not self.expr(expr).is_int:
            _fail(f"index {print_expr(expr)} is {expr.type}, not an integer")

    def expect(self, expr: Expr, t: Scalar, what: str) -> None:
        actual = self.expr(expr)
        if actual != t:
            _fail(f"{what} is {actual}, expected {t}: {print_expr(expr)}")

    def expr(self, expr: Expr) -> Scalar:
        """Checks ``expr`` and its operands; returns its type."""
        if not is_expr(expr):
            _fail(f"{expr!r} is not an expression")
        t = getattr(expr, "type", None)
        if not isinstance(t, Scalar):
            _fail(f"expression {expr!r} has type {t!r}, not a scalar")
        if isinstance(expr, Const):
            self.const(expr)
        elif isinstance(expr, Var):
            if expr.name not in self.scalars:
                _fail(f"{expr.name} is not a declared local or scalar parameter")
            if self.scalars[expr.name] != t:
                _fail(f"{expr.name} is {self.scalars[expr.name]} but used as {t}")
        elif isinstance(expr, PositionOf):
            if not isinstance(expr.which, Position) or t != u32:
                _fail(f"a position must be a Position of type u32: {expr!r}")
        elif isinstance(expr, Length):
            self.array(expr.array)
            if expr.array in self.allocated:
                _fail(f"the length of {expr.array} is its constant size, not a Length")
            if t != u32:
                _fail(f"the length of {expr.array} must be u32")
        elif isinstance(expr, Shape | Stride):
            self.tensor(expr.tensor, expr.dim)
            if t != u32:
                _fail(f"the shape and strides of {expr.tensor} are u32")
        elif isinstance(expr, TensorIndex):
            rank = self.tensor(expr.tensor).rank
            if not isinstance(expr.indices, tuple) or len(expr.indices) != rank:
                _fail(f"{expr.tensor} has rank {rank}, indexed by {len(expr.indices)} indices")
            for index in expr.indices:
                self.index(index)
            if t != u32:
                _fail(f"the offset into {expr.tensor} is u32")
        elif isinstance(expr, Load):
            if self.array(expr.array).elem != t:
                _fail(f"a load from {expr.array} must have its element type")
            if _is_atomic(self.arrays[expr.array]):
                _fail(f"{expr.array} holds atomics, read by an atomic load")
            self.buffer_index(expr.array, expr.index)
        elif isinstance(expr, Unary):
            self.unary(expr)
        elif isinstance(expr, Binary):
            self.binary(expr)
        elif isinstance(expr, Cast):
            self.expr(expr.value)
        elif isinstance(expr, Bitcast):
            source = self.expr(expr.value)
            if source.bits != t.bits or bool_ in (source, t):
                _fail(f"a bitcast from {source} to {t} changes the width or involves bool")
        elif isinstance(expr, Math):
            self.math(expr)
        elif isinstance(expr, Select):
            self.expect(expr.cond, bool_, "a select condition")
            self.expect(expr.if_true, t, "a select's first value")
            self.expect(expr.if_false, t, "a select's second value")
        else:
            assert_never(expr)
        return t

    def const(self, const: Const) -> None:
        value, t = const.value, const.type
        if t.kind is Kind.BOOL:
            ok = isinstance(value, bool)
        elif t.is_int:
            ok = isinstance(value, int) and not isinstance(value, bool)
            if ok:
                bits = t.bits
                low, high = (
                    (0, (1 << bits) - 1)
                    if t.kind is Kind.UINT
                    else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
                )
                ok = low <= value <= high  # type: ignore[operator]
        else:
            ok = isinstance(value, float)
        if not ok:
            _fail(f"constant {value!r} is not a valid {t}")

    def unary(self, expr: Unary) -> None:
        operand = self.expr(expr.operand)
        if operand != expr.type:
            _fail(f"{expr.op.value} of a {operand} must have type {operand}, not {expr.type}")
        if expr.op is UnaryOp.NOT and operand != bool_:
            _fail(f"not takes a bool, not {operand}")
        if expr.op is UnaryOp.NEG and operand.kind is Kind.BOOL:
            _fail("neg takes a number, not bool")
        if expr.op is UnaryOp.INVERT and not operand.is_int:
            _fail(f"invert takes an integer, not {operand}")

    def binary(self, expr: Binary) -> None:
        op = expr.op
        lhs, rhs = self.expr(expr.lhs), self.expr(expr.rhs)
        mixed_ok = (op in _SHIFTS or (op is BinaryOp.POW and lhs.is_int)) and rhs.is_int
        if lhs != rhs and not mixed_ok:
            _fail(f"{op.value} of {lhs} and {rhs}: operands must have one type")
        result = bool_ if op.is_comparison or op.is_logical else lhs
        if expr.type != result:
            _fail(f"{op.value} of {lhs} must have type {result}, not {expr.type}")
        if op.is_logical and lhs != bool_:
            _fail(f"{op.value} takes bools, not {lhs}")
        if op in _NUMERIC_OPS and lhs.kind is Kind.BOOL:
            _fail(f"{op.value} takes numbers, not bool")
        if op is BinaryOp.DIV and not lhs.is_float:
            _fail(f"div takes floats, not {lhs}")
        if op is BinaryOp.POW and lhs.kind is Kind.BOOL:
            _fail("pow takes numbers, not bool")
        if (op in _INT_OPS or op in _SHIFTS) and not lhs.is_int:
            _fail(f"{op.value} takes integers, not {lhs}")

    def math(self, expr: Math) -> None:
        arity = _ARITY.get(expr.fn, 1)
        if len(expr.args) != arity:
            _fail(f"{expr.fn.value} takes {arity} argument(s), not {len(expr.args)}")
        for arg in expr.args:
            self.expect(arg, expr.type, f"an argument of {expr.fn.value}")
        if expr.type.kind is Kind.BOOL or (expr.type.is_int and expr.fn not in _INT_MATH):
            _fail(f"{expr.fn.value} does not take {expr.type}")


def _is_atomic(t: BufferType) -> bool:
    return t.atomic


def _brief(stmt: object) -> str:
    if not is_stmt(stmt):
        return repr(stmt)
    return print_stmt(stmt).splitlines()[0]


def validate_for(
    kernel: KernelIR, capabilities: Capabilities, cube_dim: tuple[int, int, int]
) -> None:
    """Accepts ``kernel``, specialised for ``cube_dim``, on a target with ``capabilities``, or
    raises :class:`~cubejit.errors.ValidationError` saying what the target lacks. ``kernel``
    must already be valid (:func:`validate`)."""
    try:
        _check_capabilities(kernel, capabilities, cube_dim)
    except _Invalid as exc:
        raise ValidationError(
            f"kernel {kernel.name}: the {capabilities.backend} backend cannot run it: {exc}",
            kernel=kernel.name,
        ) from None


def _check_capabilities(
    kernel: KernelIR, capabilities: Capabilities, cube_dim: tuple[int, int, int]
) -> None:
    for axis, dim, limit in zip("xyz", cube_dim, capabilities.largest_cube, strict=True):
        if dim > limit:
            _fail(f"cube_dim {cube_dim} has {dim} units along {axis}; at most {limit}")
    units = math.prod(cube_dim)
    if units > capabilities.max_units_per_cube:
        _fail(
            f"cube_dim {cube_dim} has {units} units per cube; "
            f"at most {capabilities.max_units_per_cube}"
        )
    values = declared(kernel)
    for value in values.values():
        item = value.item
        if item.width == 1:
            continue
        if (
            item.width not in capabilities.line_widths
            or item.width * item.elem.itemsize > capabilities.max_line_bytes
        ):
            _fail(f"{value.name} has lines of {item}, which this target has not")
    check_cooperation(kernel, capabilities, _fail)
    for stmt in walk_stmts(kernel.body):
        done = own_traits(stmt, values)
        if done.synchronises is not None and done.synchronises not in capabilities.barriers:
            _fail(
                f"it has no barrier across a {done.synchronises.name.lower()}\n  in: {_brief(stmt)}"
            )
