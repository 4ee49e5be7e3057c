"""Translating ``for`` loops: ``range`` loops to the IR's ``RangeFor``, ``cj.unroll`` loops to
copies of their body.

``for i in cj.unroll(range(N))`` needs every bound to be a constant (comptime values and
literals); its body is translated once per value with ``i`` bound to that constant, so an
``if`` on ``i`` folds away. There is no loop left to jump in, so ``break`` and ``continue`` set
a flag, and the statements and copies they skip run under ``if not flag``.
"""

from __future__ import annotations

import ast
import builtins

from cubejit.ir.nodes import Assign, Break, Const, If, RangeFor, Stmt, Var
from cubejit.ir.types import bool_
from cubejit.lang import intrinsics
from cubejit.lang.calls import CallRules
from cubejit.lang.folding import check_int
from cubejit.lang.frame import ConstBinding, LocalBinding, Loop
from cubejit.lang.source import Problem, Spelling
from cubejit.lang.values import Literal, PyObject, Scalarish, coerce, unify

MAX_UNROLL = 4096
"""The most copies ``cj.unroll`` makes of a body; beyond it a plain loop is the better code."""


RETURNED, JUMPED = "returned", "jumped"
"""How a statement ended its block: every path returned, or every path left it by a jump."""


def meet(a: set[str] | None, b: set[str] | None) -> set[str] | None:
    """The names defined where two paths join (None: a path that never gets there)."""
    if a is None:
        return b
    if b is None:
        return a
    return a & b


class LoopRules(CallRules):
    """The ``for`` statement."""

    def loop_body(self, stmts: list[ast.stmt], loop: Loop | str) -> bool:
        """Translates a loop body into the current block (``loop`` a :class:`Loop`, or the
        kind of a new one: "loop" or "unroll")."""
        frame = self.frame
        if isinstance(loop, str):
            loop = Loop(loop)  # type: ignore[arg-type]
        frame.loops.append(loop)
        frame.branch_depth += loop.kind == "loop"
        try:
            return self.block_of(stmts)  # type: ignore[attr-defined, no-any-return]
        finally:
            frame.branch_depth -= loop.kind == "loop"
            frame.loops.pop()

    def run_time_body(self, stmts: list[ast.stmt], defined: str | None = None) -> list[Stmt]:
        """A run-time loop's body: names it assigns are not defined after it (it may run no
        times); ``defined`` (the loop variable) is inside it."""
        frame = self.frame
        before = frame.defined
        frame.defined = None if before is None else {*before, *([defined] if defined else [])}
        with self.capture() as body:
            self.loop_body(stmts, "loop")
        frame.defined = before
        return body

    def after_loop(self, raised: int) -> None:
        """After a run-time loop that a function's ``return`` may have left: leave the loop
        around it too."""
        frame = self.frame
        flag = frame.return_flag
        if flag is not None and flag in frame.raised[raised:] and frame.loops:
            if frame.loops[-1].kind == "loop":
                self.emit(If(Var(flag, bool_), (Break(),)))

    def stmt_For(self, node: ast.For) -> str | None:
        if node.orelse:
            raise Problem("`for ... else` is not supported; test after the loop", unsupported=True)
        if not isinstance(node.target, ast.Name):
            raise Problem("a `for` binds one name: `for i in range(n)`", unsupported=True)
        call = node.iter
        callee = self.expr(call.func) if isinstance(call, ast.Call) else None
        if isinstance(callee, PyObject) and callee.obj is intrinsics.unroll:
            return self._unrolled(node, call)  # type: ignore[arg-type]
        if not (isinstance(callee, PyObject) and callee.obj is builtins.range):
            raise Problem(
                f"a `for` loop runs over `range(...)` or `cj.unroll(range(...))`, "
                f"not `{ast.unparse(call)}`",
                unsupported=True,
            )
        start, stop, step = self._bounds(call, self.operands(call.args))  # type: ignore[arg-type]
        name = node.target.id
        binding = self.frame.env.get(name)
        if isinstance(binding, ConstBinding) and binding.origin != "value":
            raise Problem(
                f"`{name}` is a constant ({binding.origin}) and cannot be a loop variable"
            )
        if isinstance(binding, LocalBinding):
            what = f"`range` of the loop variable `{name}` ({binding.type})"
            bounds = [coerce(v, binding.type, what) for v in (start, stop, step)]
            var, t = binding.ir_name, binding.type
        else:
            bounds = unify([start, stop, step], Spelling(call, quoted=True))
            t = bounds[0].type
            var = ""
        if not t.is_int:
            raise Problem(f"`range` takes integers, not {t}")
        if not var:
            var = self.declare(self.frame.prefix + name, t)
            self.frame.env[name] = LocalBinding(var, t)
        raised = len(self.frame.raised)
        body = self.run_time_body(node.body, name)
        self.emit(RangeFor(var, bounds[0], bounds[1], bounds[2], tuple(body)))
        self.after_loop(raised)
        return None

    def _bounds(
        self, call: ast.Call, args: list[Scalarish]
    ) -> tuple[Scalarish, Scalarish, Scalarish]:
        if call.keywords or not 1 <= len(args) <= 3:
            raise Problem("`range` takes one to three positional arguments")
        if len(args) == 1:
            return Literal(0), args[0], Literal(1)
        step = args[2] if len(args) == 3 else Literal(1)
        if isinstance(step, Literal) and step.value == 0:
            raise Problem("`range` step must not be zero")
        return args[0], args[1], step

    def _unrolled(self, node: ast.For, call: ast.Call) -> str | None:
        inner = call.args[0] if len(call.args) == 1 and not call.keywords else None
        callee = self.expr(inner.func) if isinstance(inner, ast.Call) else None
        if not (isinstance(callee, PyObject) and callee.obj is builtins.range):
            raise Problem("cj.unroll takes one `range(...)`: `cj.unroll(range(N))`")
        bounds = self._bounds(inner, self.operands(inner.args))  # type: ignore[union-attr, arg-type]
        values = [self.comptime_int(b) for b in bounds]
        if any(not isinstance(v, int) or isinstance(v, bool) for v in values):
            raise Problem(
                "cj.unroll needs a range of constants (cj.Comptime[int] parameters and "
                "integer literals); for a run-time bound write a plain `range(...)`"
            )
        start, stop, step = (check_int(v, ast.unparse(inner)) for v in values)  # type: ignore[arg-type]
        count = max(0, -(-(stop - start) // step))
        if count > MAX_UNROLL:
            raise Problem(
                f"cj.unroll of {count} iterations (more than {MAX_UNROLL}); "
                f"write a plain `range(...)` loop"
            )
        indices = range(start, stop, step)
        name = node.target.id  # type: ignore[union-attr]
        loop = Loop("unroll")
        frame = self.frame
        before = None if frame.defined is None else set(frame.defined)
        start_block, start = self.block, len(self.block)
        returned = self._iterations(node, name, list(indices), loop)
        if loop.break_flag is not None:
            start_block.insert(start, Assign(loop.break_flag, Const(False, bool_)))
            frame.raised = [f for f in frame.raised if f != loop.break_flag]
            frame.defined = meet(before, frame.defined)
        if indices:
            frame.env[name] = ConstBinding(Literal(indices[-1]), "value")
        return RETURNED if returned else None

    def _iterations(self, node: ast.For, name: str, indices: list[int], loop: Loop) -> bool:
        """The copies of an unrolled body for ``indices``; a copy after one that may have
        broken out (or returned from the function) runs under ``if not flag``, and none is made
        after one that always does. Whether every path returned."""
        frame = self.frame
        for position, value in enumerate(indices):
            frame.env[name] = ConstBinding(Literal(value), "unroll")
            raised = len(frame.raised)
            before = None if frame.defined is None else set(frame.defined)
            start_block, start = self.block, len(self.block)
            returned = self.loop_body(node.body, loop)
            skip = loop.continue_flag
            broke = frame.defined is None and (skip is None or skip not in frame.raised[raised:])
            if skip is not None:
                start_block.insert(start, Assign(skip, Const(False, bool_)))
                frame.raised[raised:] = [f for f in frame.raised[raised:] if f != skip]
                frame.defined = meet(before, frame.defined)
            if returned:
                return True
            if broke:
                return False
            flags = list(dict.fromkeys(frame.raised[raised:]))
            rest = indices[position + 1 :]
            if flags and rest:
                return self.guarded(  # type: ignore[attr-defined, no-any-return]
                    flags, lambda rest=rest: self._iterations(node, name, rest, loop)
                )
        return False
