"""Translating the calls of cooperation: buffer declarations, atomics, barriers, plane operations.

- ``cj.SharedMemory[T](n)`` and ``cj.LocalArray[T](n)`` declare a buffer of the kernel (an IR
  :class:`~cubejit.ir.nodes.Buffer`) whose size is comptime: :meth:`CooperationRules.comptime_int`
  folds literals, comptime parameters, ``cj.CUBE_DIM*`` and ``cj.PLANE_DIM`` (known when the
  kernel is specialised for a target) and arithmetic of those.
- ``a[i].fetch_add(v)`` and the other atomic methods, on an element of an atomic array or
  shared buffer, are an :class:`~cubejit.ir.nodes.Atomic` statement; the value held before is
  a new local the expression reads.
- ``cj.sync_cube()``, ``cj.sync_plane()`` and ``cj.plane_*(...)`` are statements too (a plane
  operation's result goes into a new local), each remembering its ``file:line`` for the barrier
  rule's messages.
"""

from __future__ import annotations

import ast

from cubejit.ir.nodes import (
    INT_ATOMICS,
    PLANE_EXCHANGES,
    Atomic,
    AtomicOp,
    Binary,
    Buffer,
    BufferKind,
    Cast,
    Const,
    Expr,
    PlaneFn,
    PlaneOp,
    PositionKind,
    PositionOf,
    SyncCube,
    SyncPlane,
    Var,
)
from cubejit.ir.types import ArrayType, LineType, TensorType, bool_, u32
from cubejit.lang.cooperation import AtomicType, BufferMaker, Collective, sync_cube
from cubejit.lang.expressions import ExpressionRules, tensor_index_nodes
from cubejit.lang.folding import int_binary, typed_int_binary, wrap_int
from cubejit.lang.signature import resolve
from cubejit.lang.source import Problem, Spelling
from cubejit.lang.values import ArrayRef, Literal, PyObject, Scalarish, Value, coerce, typed

_ATOMIC_METHODS = {op.value: op for op in AtomicOp}


class CooperationRules(ExpressionRules):
    """The cooperation half of the call translator."""

    cube_dim: tuple[int, int, int] | None = None
    """The cube's extents, when the kernel is specialised for them."""
    plane_dim: int | None = None
    """Units per plane of the target the kernel is compiled for; None when none is known."""

    def comptime_int(self, value: Scalarish) -> int | None:
        """``value`` as an int known now, or None when it is a run-time value."""
        if isinstance(value, Literal):
            v = value.value
            return v if isinstance(v, int) and not isinstance(v, bool) else None
        return self._fold(value)

    def expr_Compare(self, node: ast.Compare) -> Value:
        """A comparison, folded to a constant when it compares ints known now
        (``cj.CUBE_DIM > cj.PLANE_DIM``): the spec fixes them, so an ``if`` on one keeps only
        the branch taken, and a buffer declared in the other is never made."""
        value = super().expr_Compare(node)
        if isinstance(value, Binary) and value.op.is_comparison:
            try:
                a, b = self._fold(value.lhs), self._fold(value.rhs)
            except Problem:
                return value
            if a is not None and b is not None:
                return Literal(bool(int_binary(value.op, a, b, Spelling(node))))
        return value

    def _fold(self, e: Expr) -> int | None:
        if isinstance(e, Const):
            return e.value if isinstance(e.value, int) and not isinstance(e.value, bool) else None
        if isinstance(e, PositionOf):
            kind, axis = e.which.kind, e.which.axis
            if kind is PositionKind.PLANE_DIM:
                if self.plane_dim is None:
                    raise Problem(
                        "cj.PLANE_DIM is known only when the kernel is compiled for a "
                        "backend; launch it, or compile it through a client"
                    )
                return self.plane_dim
            if kind is PositionKind.CUBE_DIM and self.cube_dim is not None:
                dims = self.cube_dim
                return dims[axis] if axis is not None else dims[0] * dims[1] * dims[2]
            return None
        if isinstance(e, Cast):
            value = self._fold(e.value) if e.type.is_int else None
            return None if value is None else wrap_int(value, e.type)
        if isinstance(e, Binary) and e.type.is_int and not e.op.is_comparison:
            a, b = self._fold(e.lhs), self._fold(e.rhs)
            if a is None or b is None:
                return None
            return typed_int_binary(e.op, a, b, e.type)
        return None

    def cooperative_call(self, node: ast.Call) -> Value | None:
        """``node`` translated when it is a buffer declaration or an atomic method; None for
        any other call."""
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Subscript)
            and isinstance(func.value.value, ast.Name | ast.Attribute)
        ):
            base = self.expr(func.value.value)
            if isinstance(base, ArrayRef) and base.type.atomic:
                return self.atomic_call(base, func.value, func.attr, node)
            return None
        if isinstance(func, ast.Subscript):
            maker = resolve(self.frame.source, func)
            if isinstance(maker, BufferMaker):
                return self.declare_buffer(maker, node)
        return None

    def declare_buffer(self, maker: BufferMaker, node: ast.Call) -> ArrayRef:
        text = Spelling(node)
        if len(node.args) != 1 or node.keywords:
            raise Problem(f"`{maker}(n)` takes one size, in `{text}`")
        size = self.comptime_int(self.scalar(node.args[0]))
        if size is None:
            raise Problem(
                f"the size of `{text}` must be known when the kernel is specialised: an int, "
                f"a cj.Comptime[int] parameter, cj.CUBE_DIM, cj.PLANE_DIM or arithmetic of those"
            )
        if size < 1:
            raise Problem(f"`{text}` has {size} elements; a buffer needs at least one")
        shared = maker.kind is BufferKind.SHARED
        name = self.fresh(self.frame.prefix + ("shared" if shared else "local"))
        if isinstance(maker.elem, LineType):
            width = maker.elem.width
            self.allocations.append(Buffer(name, maker.kind, maker.elem.elem, size * width, False))
            return ArrayRef(name, ArrayType(maker.elem.elem, line=width), size)
        elem, atomic = (
            (maker.elem.elem, True) if isinstance(maker.elem, AtomicType) else (maker.elem, False)
        )
        self.allocations.append(Buffer(name, maker.kind, elem, size, atomic))
        return ArrayRef(name, ArrayType(elem, atomic), size)

    def atomic_call(
        self, ref: ArrayRef, element: ast.Subscript, method: str, node: ast.Call
    ) -> Value:
        text = Spelling(node)
        elem = ref.type.elem
        op = _ATOMIC_METHODS.get(method)
        if op is None:
            names = ", ".join(f".{m}()" for m in _ATOMIC_METHODS)
            raise Problem(f"an atomic element has no `.{method}`; it has {names}")
        if op in INT_ATOMICS and not elem.is_int:
            raise Problem(f"`.{method}` takes integers; this atomic holds {elem}, in `{text}`")
        if node.keywords or len(node.args) != op.operands:
            raise Problem(f"`.{method}` takes {op.operands} positional value(s), in `{text}`")
        index: Expr
        if isinstance(ref.type, TensorType):
            nodes = tensor_index_nodes(ref, element)
            evaluated = self.operands([*nodes, *node.args])
            values = evaluated[len(nodes) :]
            index = self.tensor_index(ref, nodes, evaluated[: len(nodes)])
        else:
            first, *values = self.operands([element.slice, *node.args])
            index = self.check_index(first, element.slice)
        args = tuple(coerce(v, elem, f"the value of `.{method}`") for v in values)
        result = None if op is AtomicOp.STORE else self.declare("old", elem)
        self.emit(Atomic(op, ref.name, index, args, result, self.where(node)))
        if result is None:
            return PyObject(None, f"{text}")
        return Var(result, elem)

    def collective(self, obj: Collective, node: ast.Call) -> Value:
        """A barrier or a plane operation, emitted here."""
        text = Spelling(node)
        where = f"{self.frame.source.file}:{self.frame.source.place(node)[0]}"
        fn = obj.fn
        if fn is None:
            if node.args:
                raise Problem(f"`cj.{obj.name}()` takes no arguments")
            self.emit(SyncCube(where) if obj is sync_cube else SyncPlane(where))
            return PyObject(None, f"cj.{obj.name}()")
        if len(node.args) != fn.arity:
            raise Problem(f"`cj.{obj.name}` takes {fn.arity} value(s), in `{text}`")
        values = self.operands(node.args)
        args: list[Expr]
        if fn is PlaneFn.ELECT:
            args, t = [], bool_
        elif fn in (PlaneFn.BALLOT, PlaneFn.ALL, PlaneFn.ANY):
            args = [coerce(values[0], bool_, f"the condition of cj.{obj.name}")]
            t = u32 if fn is PlaneFn.BALLOT else bool_
        else:
            value = typed(values[0])
            t = value.type
            if t == bool_:
                raise Problem(f"`cj.{obj.name}` takes a number, not a bool, in `{text}`")
            args = [value]
            if fn in PLANE_EXCHANGES:
                args.append(_lane(values[1], obj.name))
        result = self.declare(obj.name.removeprefix("plane_"), t)
        self.emit(PlaneOp(fn, result, tuple(args), where))
        return Var(result, t)


def _lane(value: Scalarish, name: str) -> Expr:
    """A lane, mask or delta: a ``u32``, any other integer converted."""
    if isinstance(value, Literal):
        return coerce(value, u32, f"the lane of cj.{name}")
    if not value.type.is_int:
        raise Problem(f"the lane of cj.{name} is an integer, not {value.type}")
    return value if value.type == u32 else Cast(value, u32)
