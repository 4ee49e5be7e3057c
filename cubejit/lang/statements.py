"""Translating Python statements: assignments, ``if`` and ``while``, and blocks of them (``for``
is in :mod:`~cubejit.lang.loops`; ``break``, ``continue`` and ``return`` in
:mod:`~cubejit.lang.jumps`).

:meth:`StatementRules.block_of` returns whether every path through a block ended in a
``return``: a ``@cj.function`` that returns a value must do so on every path. Statements after
a ``return``, ``break`` or ``continue`` are never run by Python and are not translated.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable

from cubejit.ir.nodes import (
    Assign,
    Binary,
    BinaryOp,
    Break,
    Expr,
    If,
    Load,
    Stmt,
    Store,
    TensorIndex,
    Unary,
    UnaryOp,
    Var,
    While,
)
from cubejit.ir.traversal import walk_expr
from cubejit.ir.types import Scalar, TensorType, bool_
from cubejit.lang.builder import Retranslate
from cubejit.lang.calls import CallRules
from cubejit.lang.expressions import BINARY_OPS, tensor_index_nodes
from cubejit.lang.frame import ConstBinding, LineBinding, LocalBinding
from cubejit.lang.jumps import JumpRules
from cubejit.lang.lines import has_line, lanewise
from cubejit.lang.loops import JUMPED, RETURNED, meet
from cubejit.lang.operators import binary
from cubejit.lang.signature import annotation_of
from cubejit.lang.source import Problem, Spelling
from cubejit.lang.unsupported import describe, unsupported_message
from cubejit.lang.values import (
    ArrayRef,
    LineValue,
    Literal,
    PyObject,
    Value,
    coerce,
    contains_load,
    exact_in,
    typed,
)


class StatementRules(JumpRules, CallRules):
    """The statement half of the translator."""

    def block_of(self, stmts: list[ast.stmt]) -> bool:
        """Translates ``stmts`` into the current block; whether every path returned. After a
        statement that may have set a jump flag, the rest runs under ``if not flag``."""
        frame = self.frame
        for index, stmt in enumerate(stmts):
            raised = len(frame.raised)
            ending = self.stmt(stmt)
            if ending is not None:
                frame.defined = None
                return ending == RETURNED
            flags = list(dict.fromkeys(frame.raised[raised:]))
            rest = stmts[index + 1 :]
            if flags and rest:
                return self.guarded(flags, functools.partial(self.block_of, rest))
        return False

    def guarded(self, flags: list[str], translate: Callable[[], bool]) -> bool:
        """Emits what ``translate`` translates under ``if not (flag or ...)``; whether every
        path returned (those that set a flag did when each flag is a function's return)."""
        frame = self.frame
        before = None if frame.defined is None else set(frame.defined)
        cond: Expr = Var(flags[0], bool_)
        for flag in flags[1:]:
            cond = Binary(BinaryOp.OR, cond, Var(flag, bool_), bool_)
        frame.branch_depth += 1
        try:
            with self.capture() as block:
                returned = translate()
        finally:
            frame.branch_depth -= 1
        self.emit(If(Unary(UnaryOp.NOT, cond, bool_), tuple(block)))
        frame.defined = meet(before, frame.defined)
        return returned and all(flag == frame.return_flag for flag in flags)

    def branch(self, stmts: list[ast.stmt]) -> tuple[tuple[Stmt, ...], bool, set[str] | None]:
        """``stmts`` as a block of their own, run only on some paths: the block, whether it
        returned, and the names defined where it falls through (None: it never does)."""
        frame = self.frame
        before = frame.defined
        frame.defined = None if before is None else set(before)
        frame.branch_depth += 1
        try:
            with self.capture() as block:
                returned = self.block_of(stmts)
        finally:
            frame.branch_depth -= 1
        after, frame.defined = frame.defined, before
        return tuple(block), returned, after

    def stmt(self, node: ast.stmt) -> str | None:
        """Translates one statement; says whether it returned or jumped out of the block."""
        return self.apply_rule("stmt", node)

    def stmt_Pass(self, node: ast.Pass) -> None:
        return None

    def stmt_Expr(self, node: ast.Expr) -> None:
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            self.expr(node.value)
        return None

    def stmt_Assign(self, node: ast.Assign) -> None:
        value = self.expr(node.value)
        if len(node.targets) > 1 and not isinstance(
            value, Literal | ArrayRef | PyObject | LineValue
        ):
            value = self.spill(value)
        for target in node.targets:
            self.assign(target, value)
        return None

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None or not isinstance(node.target, ast.Name):
            raise Problem(
                "an annotated assignment declares one name with a value: `x: cj.f32 = 0.0`",
                unsupported=True,
            )
        declared = annotation_of(self.frame.source, node.annotation)
        if not isinstance(declared, Scalar):
            raise Problem("a local has a scalar type, e.g. `x: cj.f32 = 0.0`")
        binding = self.frame.env.get(node.target.id)
        if isinstance(binding, LocalBinding) and binding.type != declared:
            raise Problem(f"`{node.target.id}` is already a {binding.type}")
        self.assign(node.target, coerce(self.scalar(node.value), declared, f"`{node.target.id}`"))
        return None

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        op = BINARY_OPS.get(type(node.op))
        if op is None:
            raise Problem("this augmented assignment is not supported", unsupported=True)
        text = Spelling(node)
        target = node.target
        if isinstance(target, ast.Name):
            current = self.expr(ast.copy_location(ast.Name(target.id, ast.Load()), target))
            if not isinstance(current, LineValue):
                current = self.as_scalar(current, target)
            lhs, rhs = self.operands([node.value], done=[current], lines=True)
            if has_line([lhs, rhs]):
                combined = lanewise(lambda a, b: binary(op, a, b, text), [lhs, rhs], text.quote())
                self.assign(target, combined)
                return None
            self.assign(target, binary(op, lhs, rhs, text))
            return None
        if not isinstance(target, ast.Subscript):
            raise Problem(unsupported_message(target), unsupported=True)
        read = ast.copy_location(ast.Subscript(target.value, target.slice, ast.Load()), target)
        load = self.expr(read)
        if isinstance(load, LineValue):
            lhs, rhs = self.operands([node.value], done=[load], lines=True)
            combined = lanewise(lambda a, b: binary(op, a, b, text), [lhs, rhs], text.quote())
            self.store_line(load, combined, target)
            return None
        assert isinstance(load, Load)
        if isinstance(load.index, TensorIndex):
            indices = tuple(
                self.spill(i, "index") if contains_load(i) else i for i in load.index.indices
            )
            load = Load(load.array, TensorIndex(load.index.tensor, indices), load.type, load.where)
        elif contains_load(load.index):
            load = Load(load.array, self.spill(load.index, "index"), load.type, load.where)
        current, rhs = self.operands([node.value], done=[load])
        value = coerce(
            binary(op, current, rhs, text),
            load.type,
            f"an element of `{ast.unparse(target.value)}`",
        )
        self.emit(Store(load.array, load.index, value, load.where))
        return None

    def assign(self, target: ast.expr, value: Value) -> None:
        """``target = value`` for a name or an array element."""
        if isinstance(target, ast.Subscript):
            array = self.expr(target.value)
            if not isinstance(array, ArrayRef):
                raise self.error(
                    target,
                    Problem(
                        f"only arrays and tensors can be indexed; `{ast.unparse(target.value)}` "
                        f"is not one"
                    ),
                )
            if array.type.atomic:
                raise self.error(
                    target,
                    Problem(
                        f"`{ast.unparse(target.value)}` holds atomics; write an element with "
                        f"`{ast.unparse(target)}.store(v)`"
                    ),
                )
            if array.type.line is not None:
                line = self.expr(
                    ast.copy_location(ast.Subscript(target.value, target.slice, ast.Load()), target)
                )
                assert isinstance(line, LineValue)
                self.store_line(line, value, target)
                return
            if isinstance(array.type, TensorType):
                try:
                    nodes = tensor_index_nodes(array, target)
                except Problem as problem:
                    raise self.error(target, problem) from None
                scalar, *indices = self.operands(nodes, done=[self.as_scalar(value, target)])
                element = coerce(
                    scalar, array.type.elem, f"an element of `{ast.unparse(target.value)}`"
                )
                index = self.tensor_index(array, nodes, indices)
                self.emit(Store(array.name, index, element, self.where(target)))
                return
            if isinstance(target.slice, ast.Slice | ast.Tuple):
                raise self.error(
                    target,
                    Problem(
                        "arrays are one-dimensional and written one element at a time: `a[i] = v`",
                        unsupported=True,
                    ),
                )
            if array.type.atomic:
                raise self.error(
                    target,
                    Problem(
                        f"`{ast.unparse(target.value)}` holds atomics; write an element with "
                        f"`{ast.unparse(target)}.store(v)`"
                    ),
                )
            scalar, index = self.operands([target.slice], done=[self.as_scalar(value, target)])
            element = coerce(
                scalar, array.type.elem, f"an element of `{ast.unparse(target.value)}`"
            )
            index = self.check_index(index, target.slice)
            self.emit(Store(array.name, index, element, self.where(target)))
            return
        if not isinstance(target, ast.Name):
            raise self.error(
                target,
                Problem(
                    f"assigning to {describe(target)[0]} is not supported; assign to a name or an "
                    f"array element",
                    unsupported=True,
                ),
            )
        try:
            self.bind_name(target.id, value, target)
        except Problem as problem:
            raise self.error(target, problem) from None

    def store_line(self, place: LineValue, value: Value, target: ast.Subscript) -> None:
        """Stores ``value`` (a line of the same width, or a scalar for every lane) into the
        line whose lanes ``place`` loads."""
        if not isinstance(value, LineValue):
            value = LineValue((self.as_scalar(value, target),) * place.width)
        if value.width != place.width:
            raise self.error(
                target,
                Problem(
                    f"a line of {value.width} lanes is stored into `{ast.unparse(target)}`, a "
                    f"line of {place.width}"
                ),
            )
        what = f"a lane of `{ast.unparse(target.value)}`"
        for p, v in zip(place.lanes, value.lanes, strict=True):
            assert isinstance(p, Load)
            self.emit(Store(p.array, p.index, coerce(v, p.type, what)))

    def bind_line(self, name: str, value: LineValue, binding: object) -> None:
        """``name = value`` for a line: one local per lane, made the first time."""
        lanes = [typed(v) if isinstance(v, Literal) else v for v in value.lanes]
        t = lanes[0].type
        if isinstance(binding, LineBinding):
            if binding.type != t or len(binding.ir_names) != value.width:
                raise Problem(
                    f"`{name}` is a line of {len(binding.ir_names)} {binding.type} lanes; the "
                    f"value is a line of {value.width} {t}"
                )
            owned = set(binding.ir_names)
            if value.width > 1 and any(
                isinstance(e, Var) and e.name in owned for lane in lanes for e in walk_expr(lane)
            ):
                lanes = [self.spill(lane, "lane") for lane in lanes]
            for ir_name, lane in zip(binding.ir_names, lanes, strict=True):
                self.emit(Assign(ir_name, coerce(lane, t, f"a lane of `{name}`")))
            return
        if binding is not None:
            raise Problem(f"`{name}` holds a scalar; a line cannot be assigned to it")
        names = []
        for k, lane in enumerate(lanes):
            ir_name = self.fresh(f"{self.frame.prefix}{name}_lane{k}")
            self.locals[ir_name] = t
            self.emit(Assign(ir_name, coerce(lane, t, f"a lane of `{name}`")))
            names.append(ir_name)
        self.frame.env[name] = LineBinding(tuple(names), t)

    def bind_name(self, name: str, value: Value, node: ast.expr) -> None:
        """``name = value``: a new local the first time (typed by ``value``), else an
        assignment of the local's type."""
        frame = self.frame
        binding = frame.env.get(name)
        if isinstance(binding, ConstBinding) and binding.origin == "comptime":
            raise Problem(
                f"`{name}` is a comptime parameter and cannot be assigned; copy it "
                f"to a local first: `{name.lower()}_value = {name}`"
            )
        if isinstance(binding, ConstBinding) and binding.origin == "unroll":
            raise Problem(f"`{name}` is the index of a cj.unroll loop and cannot be assigned")
        if binding is None and isinstance(value, ArrayRef) and value.length is not None:
            frame.env[name] = value
            return
        if isinstance(binding, ArrayRef) or isinstance(value, ArrayRef):
            raise Problem(
                "arrays cannot be assigned or renamed; index them (`a[i] = v`) or "
                "pass them to a @cj.function",
                unsupported=True,
            )
        if isinstance(value, LineValue) or isinstance(binding, LineBinding):
            if not isinstance(value, LineValue):
                raise Problem(f"`{name}` holds a line; assign it a line (`cj.line(v, n)`)")
            if frame.defined is not None:
                frame.defined.add(name)
            self.bind_line(name, value, binding)
            return
        scalar = self.as_scalar(value, node)
        if frame.defined is not None:
            frame.defined.add(name)
        if isinstance(binding, LocalBinding):
            literal = self.from_literal.get(binding.ir_name)
            if (
                literal is not None
                and not isinstance(scalar, Literal)
                and scalar.type != binding.type
                and binding.ir_name not in self.retyped
                and exact_in(literal, scalar.type)
            ):
                raise Retranslate({**self.retyped, binding.ir_name: scalar.type})
            self.emit(Assign(binding.ir_name, coerce(scalar, binding.type, f"`{name}`")))
            return
        ir_name = self.fresh(frame.prefix + name)
        if isinstance(scalar, Literal):
            self.from_literal[ir_name] = scalar
            expr = coerce(scalar, self.retyped.get(ir_name) or typed(scalar).type, f"`{name}`")
        else:
            expr = scalar
        self.locals[ir_name] = expr.type
        frame.env[name] = LocalBinding(ir_name, expr.type)
        self.emit(Assign(ir_name, expr))

    def stmt_If(self, node: ast.If) -> str | None:
        cond = self.condition(node.test, "`if`")
        if isinstance(cond, Literal):
            if self.block_of(node.body if cond.value else node.orelse):
                return RETURNED
            return JUMPED if self.frame.defined is None else None
        then, then_returned, then_defined = self.branch(node.body)
        orelse, else_returned, else_defined = self.branch(node.orelse)
        self.emit(If(cond, then, orelse))
        self.frame.defined = meet(then_defined, else_defined)
        if then_returned and else_returned:
            return RETURNED
        return JUMPED if then_defined is None and else_defined is None else None

    def stmt_While(self, node: ast.While) -> str | None:
        if node.orelse:
            raise Problem(
                "`while ... else` is not supported; test after the loop", unsupported=True
            )
        with self.capture() as test_stmts:
            cond = self.condition(node.test, "`while`")
        if isinstance(cond, Literal) and not cond.value:
            return None
        raised = len(self.frame.raised)
        if test_stmts:
            exit_test = If(Unary(UnaryOp.NOT, coerce(cond, bool_, "`while`"), bool_), (Break(),))
            node_body = node.body
            with self.capture() as body:
                self.block.extend(test_stmts)
                self.emit(exit_test)
                self.block.extend(self.run_time_body(node_body))
        else:
            body = self.run_time_body(node.body)
        loop_cond = coerce(cond if not test_stmts else Literal(True), bool_, "`while`")
        self.emit(While(loop_cond, tuple(body)))
        self.after_loop(raised)
        if isinstance(cond, Literal) and not _breaks(node.body):
            self.frame.defined = None
            return RETURNED
        return None


def _breaks(stmts: list[ast.stmt]) -> bool:
    """Whether a ``break`` in ``stmts`` leaves the loop they are the body of (one inside a
    nested loop leaves that loop instead)."""
    for stmt in stmts:
        if isinstance(stmt, ast.Break):
            return True
        if isinstance(stmt, ast.For | ast.While):
            continue
        inner = [n for f in ("body", "orelse") for n in getattr(stmt, f, [])]
        if _breaks(inner):
            return True
    return False
