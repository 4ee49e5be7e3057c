"""Translating calls: casts, math, ``cdiv``, ``a.len()`` and inlining ``@cj.function`` calls.

An inlined call gets a frame of its own: its parameters are bound to the arguments (a constant
stays a constant, an array stays the caller's array, a value gets a private local unless the
function never assigns the parameter and the value is a plain variable), its names are prefixed
``<function>_<n>_`` and its result is an expression the caller uses.
"""

from __future__ import annotations

import ast
import builtins
import math

from cubejit.ir.nodes import (
    Assign,
    Binary,
    BinaryOp,
    Const,
    Expr,
    Length,
    Math,
    MathFn,
    Print,
    Select,
    Shape,
    Stride,
    Var,
)
from cubejit.ir.types import LINE_SIZES, ArrayType, Scalar, TensorType, bool_, f32, u32
from cubejit.lang import division, intrinsics
from cubejit.lang.annotations import ComptimeType
from cubejit.lang.cooperation import Collective
from cubejit.lang.cooperative_calls import CooperationRules
from cubejit.lang.frame import Binding, ConstBinding, Frame, LocalBinding
from cubejit.lang.function import Function
from cubejit.lang.lines import has_line, in_lines, lanewise
from cubejit.lang.operators import bitcast, cast, fold_binary, math_call
from cubejit.lang.signature import annotation_of
from cubejit.lang.source import Problem, Spelling
from cubejit.lang.values import (
    ArrayRef,
    LineValue,
    Literal,
    PyObject,
    Scalarish,
    Value,
    coerce,
    contains_load,
    unify,
)

_INSTEAD = {
    builtins.int: "cj.i32(x) (or another integer type)",
    builtins.float: "cj.f32(x) (or cj.f64)",
    builtins.bool: "a comparison, or cj.bool_(x)",
    builtins.len: "`a.len()`",
    builtins.pow: "`x ** y`, or cj.pow(x, y) on floats",
    builtins.range: "`range(...)` only as the iterable of a `for`",
    intrinsics.unroll: "`cj.unroll(range(N))` only as the iterable of a `for`",
}


_BUFFER_METHODS = frozenset(("len", "rank", "shape", "stride", "coordinate", "line_size"))


class CallRules(CooperationRules):
    """The call half of the expression translator."""

    def expr_Call(self, node: ast.Call) -> Value:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _BUFFER_METHODS:
            target = self.expr(func.value)
            if isinstance(target, ArrayRef):
                return self.buffer_method(target, func.attr, node)
        cooperative = self.cooperative_call(node)
        if cooperative is not None:
            return cooperative
        callee = self.expr(func)
        text = Spelling(node)
        if not isinstance(callee, PyObject):
            raise Problem(f"`{ast.unparse(func)}` is not callable")
        obj = callee.obj
        if isinstance(obj, Function):
            return self.inline(obj, node)
        if isinstance(obj, Collective):
            return self.collective(obj, node)
        if obj is builtins.print:
            return self.print_call(node)
        if any(isinstance(a, ast.Starred) for a in node.args) or node.keywords:
            raise Problem(
                f"`{callee.spelling}` takes positional arguments only, in `{text}`",
                unsupported=True,
            )
        if isinstance(obj, Scalar):
            if len(node.args) != 1:
                raise Problem(f"a cast takes one value: `cj.{obj}(x)`, in `{text}`")
            value = self.expr(node.args[0])
            if isinstance(value, LineValue):
                return lanewise(lambda v: cast(v, obj, text), [value], text.quote())
            return cast(self.as_scalar(value, node.args[0]), obj, text)
        marker = intrinsics.PYTHON_BUILTINS.get(obj, obj)  # type: ignore[call-overload]
        if isinstance(marker, intrinsics.MathMarker):
            args = self.operands(node.args, lines=True)
            if has_line(args):
                return lanewise(lambda *a: math_call(marker, list(a), text), args, text.quote())
            return math_call(marker, args, text)
        if obj is intrinsics.line:
            return self.line_of_copies(node, text)
        if obj is division.cdiv:
            return self.cdiv(node, text)
        if obj is intrinsics.isnan or obj is intrinsics.isinf:
            return self.float_test(obj is intrinsics.isnan, node, text)
        if obj is intrinsics.bitcast:
            if len(node.args) != 2:
                raise Problem("cj.bitcast takes a value and a type: `cj.bitcast(x, cj.u32)`")
            target = self.expr(node.args[1])
            if not (isinstance(target, PyObject) and isinstance(target.obj, Scalar)):
                raise Problem(
                    f"the second argument of cj.bitcast is a type, e.g. cj.u32, in `{text}`"
                )
            return bitcast(self.scalar(node.args[0]), target.obj, text)
        instead = _INSTEAD.get(obj)  # type: ignore[call-overload]
        if instead is not None:
            raise Problem(
                f"`{callee.spelling}(...)` is not supported in a kernel; write {instead}",
                unsupported=True,
            )
        from cubejit.lang.kernel import Kernel

        if isinstance(obj, Kernel):
            raise Problem(
                f"a kernel cannot call the kernel `{callee.spelling}`; put the shared "
                f"code in a @cj.function",
                unsupported=True,
            )
        raise Problem(
            f"calling `{callee.spelling}` is not supported; a kernel calls casts "
            f"(cj.f32(x)), cj math functions and @cj.function functions",
            unsupported=True,
        )

    def print_call(self, node: ast.Call) -> Value:
        """``print(a, b, ...)``: strings and constants become the line's text, scalars its
        values, separated by spaces as Python's ``print`` does."""
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise Problem(
                "`print(...)` in a kernel takes positional strings and values only",
                unsupported=True,
            )
        text = [""]
        args: list[Expr] = []
        for k, arg in enumerate(node.args):
            if k:
                text[-1] += " "
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                text[-1] += arg.value
                continue
            value = self.expr(arg)
            if isinstance(value, Literal):
                text[-1] += str(value.value)
            elif isinstance(value, PyObject) and isinstance(value.obj, str | bool | int | float):
                text[-1] += str(value.obj)
            elif isinstance(value, PyObject | ArrayRef):
                raise Problem(
                    f"`{ast.unparse(arg)}` cannot be printed; a kernel prints strings and "
                    f'scalars, e.g. `print("x =", x[i])`'
                )
            else:
                args.append(value)
                text.append("")
        self.emit(Print(tuple(text), tuple(args), self.where(node)))
        return PyObject(None, "print(...)")

    def buffer_method(self, ref: ArrayRef, method: str, node: ast.Call) -> Value:
        """``a.len()``, and a tensor's ``t.rank()``, ``t.shape(d)``, ``t.stride(d)`` and
        ``t.coordinate(i, d)``; ``d`` is a constant (a literal, comptime value or ``cj.unroll``
        index) below the rank."""
        text = Spelling(node)
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise Problem(f"`.{method}(...)` takes positional arguments only, in `{text}`")
        arity = {"len": 0, "rank": 0, "shape": 1, "stride": 1, "coordinate": 2, "line_size": 0}
        width = ref.type.line or 1
        if method == "line_size":
            if node.args:
                raise Problem("`.line_size()` takes no arguments")
            return Literal(width)
        if method == "len":
            if node.args:
                raise Problem("`.len()` takes no arguments")
            if ref.length is not None:
                return Literal(ref.length)
            return in_lines(Length(ref.name), width)
        t = ref.type
        if not isinstance(t, TensorType) or t.rank is None:
            raise Problem(
                f"`.{method}()` is a tensor's; `{ast.unparse(node.func)}` is an array, which "
                f"has one method, `.len()` (annotate it cj.Tensor[...] for a strided view)",
                unsupported=True,
            )
        if len(node.args) != arity[method]:
            raise Problem(f"`.{method}()` takes {arity[method]} argument(s), in `{text}`")
        if method == "rank":
            return Literal(t.rank)
        dim = self.scalar(node.args[-1])
        if (
            not isinstance(dim, Literal)
            or isinstance(dim.value, bool)
            or not isinstance(dim.value, int)
        ):
            raise Problem(
                f"the dimension of `{text}` must be a constant int (a literal, a comptime "
                f"value or a cj.unroll index)"
            )
        d = dim.value
        if not 0 <= d < t.rank:
            raise Problem(f"`{text}`: dimension {d} of a tensor of rank {t.rank}")
        last = t.rank - 1

        def shape(k: int) -> Expr:
            return in_lines(Shape(ref.name, k), width if k == last else 1)

        if method == "shape":
            return shape(d)
        if method == "stride":
            return in_lines(Stride(ref.name, d), width if d != last else 1)
        index = coerce(self.scalar(node.args[0]), u32, f"the index of `{text}`")
        inner: Expr | None = None
        for k in range(d + 1, t.rank):
            inner = shape(k) if inner is None else Binary(BinaryOp.MUL, inner, shape(k), u32)
        if inner is not None:
            index = Binary(BinaryOp.FLOORDIV, index, inner, u32)
        return Binary(BinaryOp.MOD, index, shape(d), u32)

    def line_of_copies(self, node: ast.Call, text: Spelling) -> LineValue:
        """``cj.line(v, n)``: ``n`` (comptime) lanes, each the scalar ``v``."""
        if len(node.args) != 2:
            raise Problem(f"cj.line takes a scalar and a comptime lane count, in `{text}`")
        value, count = self.operands(node.args)
        if (
            not isinstance(count, Literal)
            or isinstance(count.value, bool)
            or count.value not in LINE_SIZES
        ):
            raise Problem(
                f"the lane count of `{text}` is a constant 8, 4, 2 or 1 (a literal, a comptime "
                f"value or `x.line_size()`)"
            )
        if isinstance(value, Expr) and contains_load(value):
            value = self.spill(value, "lane")
        return LineValue((value,) * int(count.value))

    def float_test(self, nan: bool, node: ast.Call, text: Spelling) -> Scalarish:
        """``cj.isnan(x)`` (``x != x``) or ``cj.isinf(x)`` (``abs(x) == inf``), on a float."""
        name = "isnan" if nan else "isinf"
        if len(node.args) != 1:
            raise Problem(f"cj.{name} takes one float, in `{text}`")
        value = self.scalar(node.args[0])
        if isinstance(value, Literal):
            if isinstance(value.value, bool):
                raise Problem(f"cj.{name} takes a float, not a bool, in `{text}`")
            v = value.float_in(f32)
            return Literal(math.isnan(v) if nan else math.isinf(v))
        if not value.type.is_float:
            raise Problem(f"cj.{name} takes a float, not {value.type}, in `{text}`")
        if nan:
            return Binary(BinaryOp.NE, value, value, bool_)
        magnitude = Math(MathFn.ABS, (value,), value.type)
        return Binary(BinaryOp.EQ, magnitude, Const(math.inf, value.type), bool_)

    def cdiv(self, node: ast.Call, text: Spelling) -> Scalarish:
        """``cj.cdiv(a, b)``: integer ceiling division, ``a // b + (a % b != 0)``, which holds
        for either sign because ``//`` floors."""
        if len(node.args) != 2:
            raise Problem(f"cj.cdiv takes two integers, in `{text}`")
        a, b = self.operands(node.args)
        if isinstance(a, Literal) and isinstance(b, Literal):
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (a.value, b.value)):
                raise Problem(f"cj.cdiv takes integers, in `{text}`")
            quotient = fold_binary(BinaryOp.FLOORDIV, a, b, text)
            return Literal(quotient.value + (a.value % b.value != 0))  # type: ignore[operator]
        x, y = unify([a, b], text.quote())
        if not x.type.is_int:
            raise Problem(f"cj.cdiv takes integers, not {x.type}, in `{text}`")
        t = x.type
        inexact = Binary(BinaryOp.NE, Binary(BinaryOp.MOD, x, y, t), Const(0, t), bool_)
        return Binary(
            BinaryOp.ADD,
            Binary(BinaryOp.FLOORDIV, x, y, t),
            Select(inexact, Const(1, t), Const(0, t), t),
            t,
        )

    def inline(self, fn: Function, node: ast.Call) -> Value:
        """The call ``node`` of ``fn``, expanded here; returns its result."""
        if any(f.source.fn is fn.fn for f in self.frames):
            raise Problem(
                f"@cj.function {fn.name} calls itself; recursion is not supported "
                f"(inlining would never end): write a loop",
                unsupported=True,
            )
        args = fn.source.tree.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
            raise Problem(
                f"@cj.function {fn.name}: only plain parameters are supported "
                f"(no defaults, *args, **kwargs, keyword-only or positional-only)",
                unsupported=True,
            )
        names = [a.arg for a in args.args]
        values = self._arguments(fn, node, names)
        count = self.inlined.get(fn.fn.__name__, 0) + 1
        self.inlined[fn.fn.__name__] = count
        frame = Frame(fn.source, f"{fn.fn.__name__}_{count}_", fn.assigned, call=(self.frame, node))
        self.frames.append(frame)
        start_block, start = self.block, len(self.block)
        try:
            try:
                self._enter(fn, frame, values)
                body = fn.body()
            except Problem as problem:
                raise self.error(fn.source.tree, problem) from None
            complete = self.block_of(body)
        finally:
            self.frames.pop()
        if frame.return_flag is not None:
            start_block.insert(start, Assign(frame.return_flag, Const(False, bool_)))
        if not frame.returns_value:
            return PyObject(None, f"{fn.fn.__name__}(...)")
        if not complete:
            raise Problem(
                f"@cj.function {fn.name} does not return a value on every path; end "
                f"each path with `return value`"
            )
        if frame.result_name is not None:
            return Var(frame.result_name, self.locals[frame.result_name])
        assert frame.result is not None
        return frame.result

    def _enter(self, fn: Function, frame: Frame, values: list[Value]) -> None:
        """Binds the parameters of ``frame`` and reads the return annotation."""
        returns = fn.source.tree.returns
        if returns is not None and not (
            isinstance(returns, ast.Constant) and returns.value is None
        ):
            annotated = annotation_of(fn.source, returns)
            if not isinstance(annotated, Scalar):
                raise Problem(
                    "a @cj.function returns a scalar; annotate it with a scalar type", node=returns
                )
            frame.return_type = annotated
        for arg, value in zip(fn.source.tree.args.args, values, strict=True):
            annotated = annotation_of(fn.source, arg.annotation) if arg.annotation else None
            try:
                frame.env[arg.arg] = self._bind(frame, arg.arg, annotated, value)
                frame.defined.add(arg.arg)  # type: ignore[union-attr]
            except Problem as problem:
                problem.node = problem.node or arg
                raise

    def _arguments(self, fn: Function, node: ast.Call, names: list[str]) -> list[Value]:
        """The call's arguments in parameter order, evaluated left to right as written."""
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise Problem("*args and **kwargs are not supported in calls", unsupported=True)
        if len(node.args) > len(names):
            raise Problem(f"{fn.name} takes {len(names)} argument(s), got {len(node.args)}")
        slots: dict[str, int] = {name: i for i, name in enumerate(names[: len(node.args)])}
        for i, keyword in enumerate(node.keywords, start=len(node.args)):
            if keyword.arg not in names:
                raise Problem(f"{fn.name} has no parameter `{keyword.arg}`")
            if keyword.arg in slots:
                raise Problem(f"{fn.name} got `{keyword.arg}` twice")
            slots[keyword.arg] = i
        missing = [name for name in names if name not in slots]
        if missing:
            raise Problem(f"{fn.name} is missing argument(s): {', '.join(missing)}")
        written = [*node.args, *(k.value for k in node.keywords)]
        values = self.operands(written, arrays=True)
        return [values[slots[name]] for name in names]

    def _bind(self, frame: Frame, name: str, annotated: object, value: Value) -> Binding:
        what = f"parameter `{name}` of {frame.source.name}"
        if isinstance(annotated, ComptimeType):
            raise Problem(
                f"cj.Comptime parameters belong to kernels; annotate `{name}` with a "
                f"scalar type or leave it unannotated"
            )
        if isinstance(value, ArrayRef):
            any_rank = (
                isinstance(annotated, TensorType)
                and annotated.rank is None
                and isinstance(value.type, TensorType)
                and annotated.elem == value.type.elem
            )
            if annotated is not None and annotated != value.type and not any_rank:
                raise Problem(f"{what} is {annotated}, but an {value.type} was passed")
            return value
        if isinstance(annotated, ArrayType | TensorType):
            raise Problem(f"{what} is {annotated}, but a scalar was passed")
        if isinstance(value, PyObject):
            raise Problem(
                f"{what}: passing `{value.spelling}` is not supported; pass numbers, "
                f"bools and arrays",
                unsupported=True,
            )
        if isinstance(value, LineValue):
            raise Problem(
                f"{what}: passing a line to a @cj.function is not supported; pass the lined "
                f"array and an index, or the lanes one by one",
                unsupported=True,
            )
        if isinstance(annotated, Scalar):
            value = coerce(value, annotated, what)
        elif isinstance(value, Literal):
            return ConstBinding(value, "value")
        if isinstance(value, Var) and name not in frame.assigned:
            return LocalBinding(value.name, value.type)
        ir_name = self.declare(frame.prefix + name, value.type)
        self.emit(Assign(ir_name, value))
        return LocalBinding(ir_name, value.type)
