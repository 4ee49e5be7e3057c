"""The checked variant of a kernel: every buffer access compared with its length first.

:func:`checked` rewrites a kernel so that, before each statement, every element access the
statement makes (a load, a store, an atomic) is checked: an index outside ``[0, length)`` runs
:class:`~cubejit.ir.nodes.BoundsFailure` (the launch's first failure is recorded) and then
``return``, which ends that unit before the access happens. Buffers are found by value kind
(:mod:`cubejit.ir.values`), so parameter arrays, tensors (each coordinate against its extent),
shared memory and local arrays are all covered, and a kind added later is refused here until
its length is known. An access evaluated only under a condition (a branch of ``a if c else
b``, the right side of ``and``/``or``, a ``while`` condition) is checked under the same
condition, so a guarded access is never reported. Each check is a numbered :class:`Site`; the
client maps the recorded number back to the site for its message.

The unchecked kernel is never touched: a backend runs this pass only for a checked variant.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import assert_never

from cubejit.ir import nodes as ir
from cubejit.ir.traversal import operands
from cubejit.ir.types import Kind, Scalar, bool_, i64, u64
from cubejit.ir.values import Value, ValueKind, declared


@dataclass(frozen=True, slots=True)
class Site:
    """One checked access: which buffer, which dimension of a tensor (None for an array or
    shared or local buffer), and where it is in the kernel's source (``file:line``)."""

    buffer: str
    dim: int | None
    where: str
    kind: ValueKind = ValueKind.GLOBAL_BUFFER

    def describe(self) -> str:
        """The buffer as a message names it: a parameter by its name (a tensor's dimension
        too), shared memory and local arrays by their kind (their names are the IR's)."""
        if self.kind is ValueKind.SHARED_BUFFER:
            return "shared memory"
        if self.kind is ValueKind.LOCAL_ARRAY:
            return "a local array"
        return self.buffer if self.dim is None else f"{self.buffer} (dimension {self.dim})"


def checked(kernel: ir.KernelIR) -> tuple[ir.KernelIR, tuple[Site, ...]]:
    """``kernel`` with its accesses checked, and the sites its ``BoundsFailure`` statements
    number (the same for the same kernel, so a client may compute them again)."""
    pass_ = _Checker(declared(kernel), {b.name: b.size for b in kernel.allocations})
    body = pass_.block(kernel.body, ())
    return (
        ir.KernelIR(kernel.name, kernel.params, kernel.locals, body, kernel.allocations),
        tuple(pass_.sites),
    )


class _Checker:
    def __init__(self, values: Mapping[str, Value], sizes: Mapping[str, int]) -> None:
        self.values = values
        self.sizes = sizes
        self.sites: list[Site] = []

    def block(
        self, stmts: tuple[ir.Stmt, ...], recheck: tuple[ir.Stmt, ...]
    ) -> tuple[ir.Stmt, ...]:
        """``stmts`` checked; ``recheck`` is what a ``continue`` of this loop body runs first
        (the checks of the ``while`` condition it evaluates next)."""
        out: list[ir.Stmt] = []
        for s in stmts:
            out.extend(self.stmt(s, recheck))
        return tuple(out)

    def stmt(self, s: ir.Stmt, recheck: tuple[ir.Stmt, ...]) -> list[ir.Stmt]:
        if isinstance(s, ir.If):
            then = self.block(s.then, recheck)
            orelse = self.block(s.orelse, recheck)
            return [*self.expr(s.cond), ir.If(s.cond, then, orelse)]
        if isinstance(s, ir.RangeFor):
            head = [c for e in (s.start, s.stop, s.step) for c in self.expr(e)]
            return [*head, ir.RangeFor(s.var, s.start, s.stop, s.step, self.block(s.body, ()))]
        if isinstance(s, ir.While):
            cond = tuple(self.expr(s.cond))
            body = self.block(s.body, cond)
            return [*cond, ir.While(s.cond, (*body, *cond))]
        if isinstance(s, ir.Continue):
            return [*recheck, s]
        found = [c for e in operands(s) for c in self.expr(e)]
        if isinstance(s, ir.Store | ir.Atomic):
            found.extend(self.access(s.array, s.index, s.where))
        elif not isinstance(
            s,
            ir.Assign
            | ir.Break
            | ir.Return
            | ir.SyncCube
            | ir.SyncPlane
            | ir.PlaneOp
            | ir.Print
            | ir.BoundsFailure,
        ):
            assert_never(s)
        return [*found, s]

    def expr(self, e: ir.Expr) -> list[ir.Stmt]:
        """The checks of the accesses ``e`` makes, each under the condition it is made."""
        if isinstance(e, ir.Select):
            return [
                *self.expr(e.cond),
                *_when(e.cond, self.expr(e.if_true)),
                *_when(_not(e.cond), self.expr(e.if_false)),
            ]
        if isinstance(e, ir.Binary) and e.op.is_logical:
            rhs = self.expr(e.rhs)
            taken = e.lhs if e.op is ir.BinaryOp.AND else _not(e.lhs)
            return [*self.expr(e.lhs), *_when(taken, rhs)]
        found = [c for sub in operands(e) for c in self.expr(sub)]
        if isinstance(e, ir.Load):
            found.extend(self.access(e.array, e.index, e.where))
        return found

    def access(self, buffer: str, index: ir.Expr, where: str) -> list[ir.Stmt]:
        """The checks of one element access (its index's own accesses are checked apart)."""
        value = self.values[buffer]
        if value.kind is ValueKind.GLOBAL_BUFFER:
            if isinstance(index, ir.TensorIndex):
                return [
                    self.check(Site(buffer, d, where), i, ir.Shape(buffer, d))
                    for d, i in enumerate(index.indices)
                ]
            return [self.check(Site(buffer, None, where), index, ir.Length(buffer))]
        if value.kind in (ValueKind.SHARED_BUFFER, ValueKind.LOCAL_ARRAY):
            size = ir.Const(self.sizes[buffer], i64)
            return [self.check(Site(buffer, None, where, value.kind), index, size)]
        if value.kind in (ValueKind.SCALAR_PARAM, ValueKind.LOCAL_SCALAR):
            raise ValueError(f"{buffer} is a {value.kind.value}, not a buffer")
        assert_never(value.kind)

    def check(self, found: Site, index: ir.Expr, length: ir.Expr) -> ir.Stmt:
        site = len(self.sites)
        self.sites.append(found)
        wide_length = _to(length, i64)
        if index.type.kind is Kind.INT:
            wide = _to(index, i64)
            outside: ir.Expr = ir.Binary(
                ir.BinaryOp.OR,
                ir.Binary(ir.BinaryOp.LT, wide, ir.Const(0, i64), bool_),
                ir.Binary(ir.BinaryOp.GE, wide, wide_length, bool_),
                bool_,
            )
        else:
            outside = ir.Binary(ir.BinaryOp.GE, _to(index, u64), _to(length, u64), bool_)
            wide = _to(index, i64)
        return ir.If(outside, (ir.BoundsFailure(site, wide, wide_length), ir.Return()))


def _to(e: ir.Expr, t: Scalar) -> ir.Expr:
    return e if e.type == t else ir.Cast(e, t)


def _not(e: ir.Expr) -> ir.Expr:
    return ir.Unary(ir.UnaryOp.NOT, e, bool_)


def _when(cond: ir.Expr, checks: list[ir.Stmt]) -> list[ir.Stmt]:
    return [ir.If(cond, tuple(checks))] if checks else []
