"""Translating Python expressions: names, constants, operators, indexing, conditionals.

Expressions of the IR have no effects, but a Python expression may call a ``@cj.function`` whose
inlined statements are emitted before the expression that uses its result. Two rules keep
Python's order of evaluation: an operand that reads an array is saved to a local before a later
operand emits statements (:meth:`ExpressionRules.operands`), and an operand that only runs on
one side of ``and`` / ``or`` / ``x if c else y`` gets its statements inside an ``if``.
"""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Callable
from typing import Any, get_args

import numpy as np

from cubejit.ir.nodes import (
    Assign,
    Binary,
    BinaryOp,
    Expr,
    If,
    Load,
    Position,
    PositionOf,
    Select,
    Stmt,
    TensorIndex,
    Unary,
    UnaryOp,
    Var,
)
from cubejit.ir.types import Kind, TensorType, bool_, i32
from cubejit.lang import intrinsics
from cubejit.lang.builder import Builder
from cubejit.lang.frame import ConstBinding, LineBinding, LocalBinding
from cubejit.lang.lines import has_line, lane_index, lane_number, lanewise
from cubejit.lang.operators import binary, unary
from cubejit.lang.source import Problem, Spelling, is_missing
from cubejit.lang.unsupported import kernel_sees
from cubejit.lang.values import (
    ArrayRef,
    LineValue,
    Literal,
    PyObject,
    Scalarish,
    Value,
    coerce,
    contains_load,
    describe,
    unify,
)

BINARY_OPS: dict[type[ast.operator], BinaryOp] = {
    ast.Add: BinaryOp.ADD,
    ast.Sub: BinaryOp.SUB,
    ast.Mult: BinaryOp.MUL,
    ast.Div: BinaryOp.DIV,
    ast.FloorDiv: BinaryOp.FLOORDIV,
    ast.Mod: BinaryOp.MOD,
    ast.Pow: BinaryOp.POW,
    ast.BitAnd: BinaryOp.BITAND,
    ast.BitOr: BinaryOp.BITOR,
    ast.BitXor: BinaryOp.BITXOR,
    ast.LShift: BinaryOp.SHL,
    ast.RShift: BinaryOp.SHR,
}
COMPARE_OPS: dict[type[ast.cmpop], BinaryOp] = {
    ast.Eq: BinaryOp.EQ,
    ast.NotEq: BinaryOp.NE,
    ast.Lt: BinaryOp.LT,
    ast.LtE: BinaryOp.LE,
    ast.Gt: BinaryOp.GT,
    ast.GtE: BinaryOp.GE,
}
UNARY_OPS: dict[type[ast.unaryop], UnaryOp] = {
    ast.USub: UnaryOp.NEG,
    ast.Not: UnaryOp.NOT,
    ast.Invert: UnaryOp.INVERT,
}
IR_EXPRS = get_args(Expr)


def buffer_methods(ref: ArrayRef) -> str:
    """What may be asked of ``ref``, for messages."""
    if isinstance(ref.type, TensorType):
        return (
            "a tensor has `.len()`, `.rank()`, `.shape(d)`, `.stride(d)` and "
            "`.coordinate(i, d)`, and is indexed `t[i, j, ...]`"
        )
    return "an array has one method, `.len()`"


def tensor_index_nodes(tensor: ArrayRef, node: ast.Subscript) -> list[ast.expr]:
    """The index expressions of ``node``, a subscript of ``tensor``: exactly its rank of them."""
    assert isinstance(tensor.type, TensorType)
    rank = tensor.type.rank
    nodes = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    if any(isinstance(n, ast.Slice | ast.Starred) for n in nodes):
        raise Problem(
            f"a tensor is indexed one element at a time, `{ast.unparse(node.value)}[i, j, ...]`; "
            f"slices are not supported",
            unsupported=True,
        )
    if len(nodes) != rank:
        example = ", ".join("ijkl"[d] if d < 4 else f"i{d}" for d in range(rank or 1))
        raise Problem(
            f"`{ast.unparse(node.value)}` is a tensor of rank {rank} and takes {rank} "
            f"ind{'ex' if rank == 1 else 'ices'} (`{ast.unparse(node.value)}[{example}]`), "
            f"not {len(nodes)}"
        )
    return nodes


_MATH_NAMES = {
    m.fn.value for m in vars(intrinsics).values() if isinstance(m, intrinsics.MathMarker)
}


class ExpressionRules(Builder):
    """The expression half of the translator."""

    def expr(self, node: ast.expr) -> Value:
        """``node`` translated; a problem found here is reported at ``node``."""
        return self.apply_rule("expr", node)

    def scalar(self, node: ast.expr) -> Scalarish:
        """``node`` as a number or bool."""
        return self.as_scalar(self.expr(node), node)

    def as_scalar(self, value: Value, node: ast.expr) -> Scalarish:
        if isinstance(value, ArrayRef):
            raise self.error(
                node,
                Problem(
                    f"the array `{ast.unparse(node)}` is used as a "
                    f"value; index it (`{ast.unparse(node)}[i]`)"
                ),
            )
        if isinstance(value, LineValue):
            raise self.error(
                node,
                Problem(
                    f"`{ast.unparse(node)}` is a line of {value.width} lanes where one value "
                    f"is needed; read a lane (`v[0]`) or store it into a cj.Line buffer"
                ),
            )
        if isinstance(value, PyObject) and value.obj is None:
            raise self.error(node, Problem(f"`{value.spelling}` returns no value"))
        if isinstance(value, PyObject):
            raise self.error(
                node,
                Problem(
                    f"`{value.spelling}` is not a value here; "
                    f"call it, or see LANGUAGE.md for where it is used"
                ),
            )
        return value

    def condition(self, node: ast.expr, what: str) -> Scalarish:
        """``node`` as a bool (a run-time one or a constant); ``what`` names the construct."""
        return self.as_condition(self.expr(node), node, what)

    def as_condition(self, translated: Value, node: ast.expr, what: str) -> Scalarish:
        """``translated``, the translation of ``node``, as a bool."""
        value = self.as_scalar(translated, node)
        if isinstance(value, Literal):
            if isinstance(value.value, bool):
                return value
        elif value.type.kind is Kind.BOOL:
            return value
        text = ast.unparse(node)
        raise self.error(
            node,
            Problem(
                f"{what} needs a bool, and `{text}` is {describe(value)}; write a comparison, "
                f"e.g. `{text} != 0`"
            ),
        )

    def operands(
        self,
        nodes: list[ast.expr],
        done: list[Any] | None = None,
        arrays: bool = False,
        lines: bool = False,
    ) -> list[Any]:
        """``nodes`` as scalars (and arrays, if ``arrays``; lines, if ``lines``), translated
        left to right after the values ``done``; an earlier operand that reads an array is
        saved before a later one emits statements, as Python would have evaluated it first."""
        values: list[Value] = list(done or ())
        ends: list[int] = [len(self.block)] * len(values)
        for node in nodes:
            start = len(self.block)
            value = self.expr(node)
            if not (arrays and isinstance(value, ArrayRef)) and not (
                lines and isinstance(value, LineValue)
            ):
                value = self.as_scalar(value, node)
            if len(self.block) > start:
                for i, earlier in enumerate(values):
                    if isinstance(earlier, IR_EXPRS) and contains_load(earlier):
                        name = self.declare("tmp", earlier.type)
                        self.block.insert(ends[i], Assign(name, earlier))
                        ends[i + 1 :] = [e + 1 for e in ends[i + 1 :]]
                        values[i] = Var(name, earlier.type)
            values.append(value)
            ends.append(len(self.block))
        return values

    def expr_Constant(self, node: ast.Constant) -> Value:
        if isinstance(node.value, bool | int | float):
            return Literal(node.value)
        kind = "None" if node.value is None else type(node.value).__name__
        raise Problem(
            f"a {kind} constant is not supported in a kernel; kernels compute with "
            f"numbers and bools",
            unsupported=True,
        )

    def expr_Name(self, node: ast.Name) -> Value:
        frame = self.frame
        binding = frame.env.get(node.id)
        if isinstance(binding, LocalBinding):
            if frame.defined is not None and node.id not in frame.defined:
                line = frame.source.place(node)[0]
                raise Problem(
                    f"`{node.id}` is read at line {line} before it is assigned on some path to "
                    f"it (a local keeps no value from a branch or loop that may not have run); "
                    f"assign `{node.id}` before the `if` or loop"
                )
            return Var(binding.ir_name, binding.type)
        if isinstance(binding, LineBinding):
            return LineValue(tuple(Var(n, binding.type) for n in binding.ir_names))
        if isinstance(binding, ConstBinding):
            return binding.value
        if binding is not None:
            return binding
        if node.id in self.frame.assigned:
            raise Problem(f"`{node.id}` is used before it is assigned")
        obj = self.frame.source.lookup(node.id)
        if is_missing(obj):
            raise Problem(f"`{node.id}` is not defined")
        return self.python_object(obj, node.id)

    def expr_Attribute(self, node: ast.Attribute) -> Value:
        base = self.expr(node.value)
        if isinstance(base, PyObject) and isinstance(base.obj, types.ModuleType):
            spelling = f"{base.spelling}.{node.attr}"
            if not hasattr(base.obj, node.attr):
                raise Problem(f"`{spelling}` does not exist")
            return self.python_object(getattr(base.obj, node.attr), spelling)
        if isinstance(base, LineValue):
            raise Problem(
                f"`.{node.attr}` of `{ast.unparse(node.value)}`: a line is not atomic and has "
                f"no methods; atomics take scalar elements (cj.Array[cj.Atomic[T]])",
                unsupported=True,
            )
        if isinstance(base, ArrayRef):
            raise Problem(
                f"`.{node.attr}` of `{ast.unparse(node.value)}` is not supported; "
                f"{buffer_methods(base)}",
                unsupported=True,
            )
        raise Problem(
            f"attribute `.{node.attr}` of `{ast.unparse(node.value)}` is not "
            f"supported; {kernel_sees()}",
            unsupported=True,
        )

    def python_object(self, obj: object, spelling: str) -> Value:
        """What a Python object named ``spelling`` means in a kernel. A number or bool (a
        module constant, ``math.pi``) is captured by value, as a literal; its value is part of
        the kernel's identity (:mod:`~cubejit.lang.identity`)."""
        from cubejit.lang.function import Function
        from cubejit.lang.kernel import Kernel

        if isinstance(obj, Position):
            return PositionOf(obj)
        number = captured_number(obj)
        if number is not None:
            return Literal(number)
        if isinstance(obj, types.ModuleType | Function | Kernel | intrinsics.MathMarker) or (
            any(obj is known for known in _KNOWN_OBJECTS)
            or str(getattr(obj, "__module__", None)).startswith("cubejit.")
        ):
            return PyObject(obj, spelling)
        kind = type(obj).__name__
        hint = ""
        if callable(obj) and getattr(obj, "__name__", None) in _MATH_NAMES:
            hint = f"; use cj.{obj.__name__}"  # type: ignore[union-attr]
        elif hasattr(obj, "__array_interface__") or hasattr(obj, "__cuda_array_interface__"):
            hint = "; pass it to the kernel as a cj.Array parameter"
        raise Problem(
            f"`{spelling}` is a Python {kind} captured from outside the kernel, "
            f"which is not supported ({kernel_sees()}){hint}",
            unsupported=True,
        )

    def expr_Subscript(self, node: ast.Subscript) -> Value:
        array = self.expr(node.value)
        if isinstance(array, LineValue):
            k = lane_number(self.expr(node.slice), array, Spelling(node, quoted=True))
            return array.lanes[k]
        if isinstance(array, ArrayRef) and array.type.line is not None:
            return self.line_load(array, node)
        if not isinstance(array, ArrayRef):
            raise Problem(
                f"only arrays and tensors can be indexed; `{ast.unparse(node.value)}` is not one",
                unsupported=isinstance(array, PyObject),
            )
        if array.type.atomic:
            raise Problem(
                f"`{ast.unparse(node.value)}` holds atomics; read an element with "
                f"`{ast.unparse(node)}.load()`"
            )
        if isinstance(array.type, TensorType):
            nodes = tensor_index_nodes(array, node)
            return Load(
                array.name,
                self.tensor_index(array, nodes, self.operands(nodes)),
                array.type.elem,
                self.where(node),
            )
        if isinstance(node.slice, ast.Slice | ast.Tuple):
            raise Problem(
                "arrays are one-dimensional and indexed one element at a time: "
                "`a[i]`; compute a flat index for 2-D data",
                unsupported=True,
            )
        return Load(array.name, self.index(node.slice), array.type.elem, self.where(node))

    def line_load(self, ref: ArrayRef, node: ast.Subscript) -> LineValue:
        """``x[i]`` of a ``cj.Line[T]`` buffer: its line ``i``, one load per lane."""
        width = ref.type.line or 1
        elem = ref.type.elem
        if isinstance(ref.type, TensorType):
            nodes = tensor_index_nodes(ref, node)
            indices = [
                self.check_index(v, n) for v, n in zip(self.operands(nodes), nodes, strict=True)
            ]
            return LineValue(
                tuple(
                    Load(
                        ref.name,
                        TensorIndex(ref.name, (*indices[:-1], lane_index(indices[-1], width, k))),
                        elem,
                    )
                    for k in range(width)
                )
            )
        if isinstance(node.slice, ast.Slice | ast.Tuple):
            raise Problem("a lined array is indexed one line at a time: `a[i]`", unsupported=True)
        index = self.index(node.slice)
        if width > 1 and contains_load(index):
            index = self.spill(index, "index")
        return LineValue(
            tuple(Load(ref.name, lane_index(index, width, k), elem) for k in range(width))
        )

    def tensor_index(
        self, tensor: ArrayRef, nodes: list[ast.expr], values: list[Scalarish]
    ) -> TensorIndex:
        """The offset of ``tensor``'s element at ``values``, the translations of ``nodes``."""
        indices = tuple(self.check_index(v, n) for v, n in zip(values, nodes, strict=True))
        return TensorIndex(tensor.name, indices)

    def index(self, node: ast.expr) -> Expr:
        """An array index: any integer type; a constant must not be negative."""
        return self.check_index(self.scalar(node), node)

    def check_index(self, value: Scalarish, node: ast.expr) -> Expr:
        """``value`` (the translation of ``node``) as an array index."""
        if isinstance(value, Literal):
            if isinstance(value.value, bool) or not isinstance(value.value, int):
                raise self.error(node, Problem("an array index must be an integer"))
            if value.value < 0:
                raise self.error(
                    node,
                    Problem(
                        "negative indices are not supported; index from the start: a[a.len() - 1]",
                        unsupported=True,
                    ),
                )
            return coerce(value, i32, "an index")
        if not value.type.is_int:
            raise self.error(
                node,
                Problem(
                    f"an array index must be an integer, not {value.type}; cast it: cj.u32(...)"
                ),
            )
        return value

    def expr_BinOp(self, node: ast.BinOp) -> Value:
        op = BINARY_OPS.get(type(node.op))
        if op is None:
            raise Problem(
                f"the operator of `{ast.unparse(node)}` is not supported", unsupported=True
            )
        lhs, rhs = self.operands([node.left, node.right], lines=True)
        text = Spelling(node)
        if has_line([lhs, rhs]):
            return lanewise(lambda a, b: binary(op, a, b, text), [lhs, rhs], text.quote())
        return binary(op, lhs, rhs, text)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Value:
        value = self.expr(node.operand)
        if isinstance(value, LineValue):
            if isinstance(node.op, ast.UAdd):
                return value
            text = Spelling(node)
            op = UNARY_OPS[type(node.op)]
            return lanewise(lambda a: unary(op, a, text), [value], text.quote())
        operand = self.as_scalar(value, node.operand)
        if isinstance(node.op, ast.UAdd):
            return self._plus(operand, node)
        return unary(UNARY_OPS[type(node.op)], operand, Spelling(node))

    def _plus(self, operand: Scalarish, node: ast.UnaryOp) -> Scalarish:
        if isinstance(operand, Literal):
            if not isinstance(operand.value, bool):
                return operand
        elif operand.type.kind is not Kind.BOOL:
            return operand
        raise Problem(f"`+` on a bool in `{ast.unparse(node)}`: cast to a number first")

    def expr_Compare(self, node: ast.Compare) -> Value:
        text = Spelling(node)
        for cmp in node.ops:
            if type(cmp) not in COMPARE_OPS:
                word = "is" if isinstance(cmp, ast.Is | ast.IsNot) else "in"
                raise Problem(
                    f"`{word}` comparisons are not supported in `{text}`; "
                    f"compare values with == / != / < ...",
                    unsupported=True,
                )
        if len(node.ops) == 1:
            lhs, rhs = self.operands([node.left, node.comparators[0]], lines=True)
            if has_line([lhs, rhs]):
                op = COMPARE_OPS[type(node.ops[0])]
                return lanewise(lambda a, b: binary(op, a, b, text), [lhs, rhs], text.quote())
            return binary(COMPARE_OPS[type(node.ops[0])], lhs, rhs, text)
        left = [self.scalar(node.left)]

        def link(op: BinaryOp, right_node: ast.expr) -> Scalarish:
            lhs, right = self.operands([right_node], done=left)
            result = binary(op, lhs, right, text)
            left[0] = right
            return result

        pairs = list(zip(node.ops, node.comparators, strict=True))
        result = link(COMPARE_OPS[type(pairs[0][0])], pairs[0][1])
        for cmp, right_node in pairs[1:]:
            op = COMPARE_OPS[type(cmp)]
            result = self.short_circuit(
                BinaryOp.AND, result, lambda op=op, r=right_node: link(op, r)
            )
        return result

    def expr_BoolOp(self, node: ast.BoolOp) -> Value:
        op = BinaryOp.AND if isinstance(node.op, ast.And) else BinaryOp.OR
        word = f"`{op.value}`"
        result = self.condition(node.values[0], word)
        for operand in node.values[1:]:
            result = self.short_circuit(op, result, lambda n=operand: self.condition(n, word))
        return result

    def short_circuit(
        self, op: BinaryOp, first: Scalarish, second: Callable[[], Scalarish]
    ) -> Scalarish:
        """``first and second()`` (or ``or``): ``second`` is translated only when a constant
        ``first`` does not decide, and its statements run only when a run-time one does not."""
        if isinstance(first, Literal):
            if first.value is (op is BinaryOp.OR):
                return first
            return second()
        with self.capture() as stmts:
            rhs = coerce(second(), bool_, f"`{op.value}`")
        if not stmts:
            return Binary(op, first, rhs, bool_)
        held = self.spill(first, "cond")
        guard = held if op is BinaryOp.AND else Unary(UnaryOp.NOT, held, bool_)
        self.emit(If(guard, (*stmts, Assign(held.name, rhs))))
        return held

    def expr_IfExp(self, node: ast.IfExp) -> Value:
        test = self.expr(node.test)
        if isinstance(test, LineValue) or _is_line_choice(self, node):
            return self.line_select(test, node)
        cond = self.as_condition(test, node.test, "`x if cond else y`")
        if isinstance(cond, Literal):
            return self.scalar(node.body if cond.value else node.orelse)
        with self.capture() as then_stmts:
            if_true = self.scalar(node.body)
        with self.capture() as else_stmts:
            if_false = self.scalar(node.orelse)
        a, b = unify([if_true, if_false], Spelling(node, quoted=True))
        if not then_stmts and not else_stmts:
            return Select(cond, a, b, a.type)
        name = self.declare("choice", a.type)
        then: tuple[Stmt, ...] = (*then_stmts, Assign(name, a))
        self.emit(If(cond, then, (*else_stmts, Assign(name, b))))
        return Var(name, a.type)

    def line_select(self, test: Value, node: ast.IfExp) -> Value:
        """``a if c else b`` where ``c`` or a branch is a line: lane by lane, both sides
        computed (a line's lanes have no branch of their own)."""
        text = Spelling(node, quoted=True)
        if not isinstance(test, LineValue):
            test = self.as_condition(test, node.test, "`x if cond else y`")
        if_true, if_false = self.operands([node.body, node.orelse], lines=True)
        if not isinstance(test, LineValue) and not has_line([if_true, if_false]):
            x, y = unify([if_true, if_false], text)
            return Select(coerce(test, bool_, "the condition"), x, y, x.type)

        def choose(c: Scalarish, a: Scalarish, b: Scalarish) -> Scalarish:
            cond = coerce(c, bool_, "the condition of `x if cond else y`")
            x, y = unify([a, b], text)
            return Select(cond, x, y, x.type)

        return lanewise(choose, [test, if_true, if_false], text)


def _is_line_choice(rules: ExpressionRules, node: ast.IfExp) -> bool:
    """Whether a branch of ``node`` names a line (checked without translating it)."""
    for branch in (node.body, node.orelse):
        for name in ast.walk(branch):
            if not isinstance(name, ast.Name):
                continue
            binding = rules.frame.env.get(name.id)
            if isinstance(binding, LineBinding) or (
                isinstance(binding, ArrayRef) and binding.type.line is not None
            ):
                return True
            if name.id == "line":
                return True
    return False


def captured_number(obj: object) -> bool | int | float | None:
    """The value of a number or bool captured from outside a kernel (Python's, or a numpy
    scalar's), or None for any other object."""
    if isinstance(obj, bool | int | float):
        return obj
    if isinstance(obj, np.bool_ | np.integer | np.floating):
        return obj.item()  # type: ignore[no-any-return]
    return None


_KNOWN_OBJECTS = (
    builtins.range,
    builtins.abs,
    builtins.min,
    builtins.max,
    builtins.len,
    builtins.int,
    builtins.float,
    builtins.bool,
    builtins.print,
    builtins.pow,
)
