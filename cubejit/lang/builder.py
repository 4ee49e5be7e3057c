"""The translator's state: the IR being built, the names it uses, and where errors point.

Statements are emitted into the current block; :meth:`Builder.capture` redirects them so that
a construct can decide where its statements go (an ``if`` branch, a loop body, a short-circuit).
Every IR name comes from :meth:`Builder.fresh`, so names are unique across the kernel and every
inlined function, whatever the Python names were.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cubejit.errors import CompilationError, UnsupportedError
from cubejit.ir.nodes import Assign, Buffer, Expr, Param, Stmt, Var
from cubejit.ir.traversal import walk_expr
from cubejit.ir.types import Scalar
from cubejit.lang.frame import Frame
from cubejit.lang.source import Problem
from cubejit.lang.unsupported import unsupported_message
from cubejit.lang.values import Literal, TypeMix, exact_in


class Retranslate(Exception):
    """Raised to start the translation again with ``types``: locals first assigned a bare
    literal, given the type they were later combined with."""

    def __init__(self, types: dict[str, Scalar]) -> None:
        super().__init__("retranslate")
        self.types = types


class Builder:
    """Holds one kernel's IR under construction.

    A local first assigned a bare literal (``acc = 0``) takes the literal's default type, and
    is remembered; when a value of another type later meets it (``acc += x[i]`` with an ``f32``
    ``x``) and the literal is exact in that type, the translation starts again with the local
    declared in that type (:class:`Retranslate`). Each restart fixes one more local for good,
    so there are at most as many as such locals.
    """

    def __init__(
        self, kernel_name: str, params: tuple[Param, ...], retyped: dict[str, Scalar] | None = None
    ) -> None:
        self.retyped: dict[str, Scalar] = dict(retyped or {})
        """The types of locals a previous attempt found (IR name to type)."""
        self.from_literal: dict[str, Literal] = {}
        """Locals first assigned a bare literal in this attempt, by IR name."""
        self.kernel_name = kernel_name
        self.params = params
        self.used: set[str] = {p.name for p in params}
        self.locals: dict[str, Scalar] = {}
        self.block: list[Stmt] = []
        self.allocations: list[Buffer] = []
        """Shared memory and local arrays declared so far, in order."""
        self.frames: list[Frame] = []
        self.inlined: dict[str, int] = {}
        """How many times each function name was inlined so far (numbers its copies)."""

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def emit(self, stmt: Stmt) -> None:
        self.block.append(stmt)

    @contextmanager
    def capture(self) -> Iterator[list[Stmt]]:
        """Collects the statements emitted inside the ``with`` into the list it yields."""
        outer, self.block = self.block, []
        try:
            yield self.block
        finally:
            self.block = outer

    def fresh(self, base: str) -> str:
        """An IR name not used yet: ``base``, else ``base_2``, ``base_3``..."""
        name, n = base, 1
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name

    def declare(self, base: str, t: Scalar) -> str:
        """A new local of type ``t`` named after ``base``."""
        name = self.fresh(base)
        self.locals[name] = t
        return name

    def spill(self, value: Expr, base: str = "tmp") -> Var:
        """Evaluates ``value`` now into a new local, so later code sees this value."""
        name = self.declare(base, value.type)
        self.emit(Assign(name, value))
        return Var(name, value.type)

    def where(self, node: ast.AST) -> str:
        """``file:line`` of ``node`` in the source it was translated from (an inlined
        function's own file), for the IR nodes that carry their place."""
        return f"{self.frame.source.file}:{self.frame.source.place(node)[0]}"

    def apply_rule(self, kind: str, node: ast.AST) -> Any:
        """``node`` translated by the rule for its syntax, the method ``<kind>_<node type>``
        (``expr_BinOp``, ``stmt_If``); syntax without a rule is named as unsupported. A problem
        found there is reported at ``node``."""
        try:
            method = getattr(self, f"{kind}_{type(node).__name__}", None)
            if method is None:
                raise Problem(unsupported_message(node), unsupported=True)
            return method(node)
        except Problem as problem:
            raise self.error(node, problem) from None

    def retype(self, mix: TypeMix) -> None:
        """Raises :class:`Retranslate` if ``mix`` is resolved by a local that was first
        assigned a literal exact in the type it met, and was not retyped already."""
        found: dict[str, Scalar] = {}
        for expr, wanted in mix.wanted:
            for sub in walk_expr(expr):
                if not isinstance(sub, Var) or sub.type != expr.type:
                    continue
                literal = self.from_literal.get(sub.name)
                if (
                    literal is not None
                    and sub.name not in self.retyped
                    and exact_in(literal, wanted)
                ):
                    found.setdefault(sub.name, wanted)
        if found:
            raise Retranslate({**self.retyped, **found})

    def error(self, node: ast.AST, problem: Problem) -> CompilationError:
        """``problem`` as the error a user sees: the place (with the chain of inlined calls
        that led there), the kernel, what is wrong and what to write instead. A type mix
        that retyping a literal's local resolves raises :class:`Retranslate` instead."""
        if isinstance(problem, TypeMix):
            self.retype(problem)
        frame = self.frame
        text = frame.source.message(problem.node or node, self.kernel_name, problem.message)
        while frame.call is not None:
            caller, call = frame.call
            line, col = caller.source.place(call)
            text += (
                f"\n  in @cj.function {frame.source.name}, called at "
                f"{caller.source.file}:{line}:{col}"
            )
            frame = caller
        kind = UnsupportedError if problem.unsupported else CompilationError
        return kind(text, kernel=self.kernel_name)
