"""Hand-built IR and a spec-like stand-in, for testing the CPU backend without the language.

:class:`HandSpec` has what a client and the CPU compiler ask of a kernel spec. The builders
keep IR terse: ``b(op, lhs, rhs)`` infers the result type from the left operand.
"""

from __future__ import annotations

from cubejit.compile.id import KernelId
from cubejit.ir import nodes as n
from cubejit.ir.types import ArrayType, Scalar, bool_


class HandSpec:
    """A kernel spec around hand-built IR; ``tag`` makes its id differ from an equal IR's."""

    def __init__(self, kernel: n.KernelIR, cube_dim: tuple[int, int, int], tag: str = "") -> None:
        self.ir = kernel
        self.name = kernel.name
        self.params = kernel.params
        self.cube_dim = cube_dim
        self.comptime: dict[str, object] = {}
        self.file = "hand_built.py"
        self.line = 1
        self.defined = 0
        self._id = KernelId(kernel.name, ("hand", tag, str(kernel)), cube_dim)

    def id(self) -> KernelId:
        return self._id

    def define(self, plane_dim: int | None = None) -> n.KernelIR:
        self.defined += 1
        return self.ir


def arr(name: str, t: Scalar) -> n.Param:
    return n.Param(name, ArrayType(t))


def scalar(name: str, t: Scalar) -> n.Param:
    return n.Param(name, t)


def pos(which: str) -> n.PositionOf:
    return n.PositionOf(n.Position[which])


def b(op: str, lhs: n.Expr, rhs: n.Expr) -> n.Binary:
    kind = n.BinaryOp[op]
    return n.Binary(kind, lhs, rhs, bool_ if kind.is_comparison or kind.is_logical else lhs.type)


def load(array: str, index: n.Expr, t: Scalar) -> n.Load:
    return n.Load(array, index, t)


def guarded(index: n.Expr, bound_array: str, *stmts: n.Stmt) -> n.If:
    """``if index < len(bound_array): stmts``."""
    return n.If(b("LT", index, n.Length(bound_array)), stmts)


def kernel(
    name: str, params: list[n.Param], body: list[n.Stmt], locals_: list[n.Local] = ()
) -> n.KernelIR:  # type: ignore[assignment]
    return n.KernelIR(name, tuple(params), tuple(locals_), tuple(body))
