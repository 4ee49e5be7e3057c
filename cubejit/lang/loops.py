"""Translating ``for`` loops: ``range`` loops to the IR's ``RangeFor``, ``cj.unroll`` loops to
copies of their body.

``for i in cj.unroll(range(N))`` needs every bound to be a constant (comptime values and
literals); its body is translated once per value with ``i`` bound to that constant, so an
``if`` on ``i`` folds away. Nothing can jump inside an unrolled loop: there is no loop left.
"""

from __future__ import annotations

import ast
import builtins

from cubejit.ir.nodes import RangeFor
from cubejit.lang import intrinsics
from cubejit.lang.calls import CallRules
from cubejit.lang.frame import ConstBinding, LocalBinding
from cubejit.lang.source import Problem, Spelling
from cubejit.lang.values import Literal, PyObject, Scalarish, coerce, unify

MAX_UNROLL = 4096
"""The most copies ``cj.unroll`` makes of a body; beyond it a plain loop is the better code."""


class LoopRules(CallRules):
    """The ``for`` statement."""

    def loop_body(self, stmts: list[ast.stmt], kind: str) -> bool:
        """Translates a loop body (``kind`` "loop" or "unroll") into the current block."""
        frame = self.frame
        frame.loops.append(kind)
        frame.branch_depth += kind == "loop"
        try:
            return self.block_of(stmts)  # type: ignore[attr-defined, no-any-return]
        finally:
            frame.branch_depth -= kind == "loop"
            frame.loops.pop()

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
        with self.capture() as body:
            self.loop_body(node.body, "loop")
        self.emit(RangeFor(var, bounds[0], bounds[1], bounds[2], tuple(body)))
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
        values = [b.value if isinstance(b, Literal) else None for b in bounds]
        if any(not isinstance(v, int) or isinstance(v, bool) for v in values):
            raise Problem(
                "cj.unroll needs a range of constants (cj.Comptime[int] parameters and "
                "integer literals); for a run-time bound write a plain `range(...)`"
            )
        indices = range(*values)  # type: ignore[arg-type]
        if len(indices) > MAX_UNROLL:
            raise Problem(
                f"cj.unroll of {len(indices)} iterations (more than {MAX_UNROLL}); "
                f"write a plain `range(...)` loop"
            )
        name = node.target.id  # type: ignore[union-attr]
        env = self.frame.env
        for value in indices:
            env[name] = ConstBinding(Literal(value), "unroll")
            if self.loop_body(node.body, "unroll"):
                env[name] = ConstBinding(Literal(value), "value")
                return "returned"
        if indices:
            env[name] = ConstBinding(Literal(indices[-1]), "value")
        return None
