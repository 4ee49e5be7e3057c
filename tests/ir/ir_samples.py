"""A small valid kernel around each node kind, for tests that must reach every kind.

:data:`SAMPLES` maps each node class to a block holding one; :func:`sample_kernel` wraps a block
in a kernel whose names cover every type the block uses, either at the top of the unit or under
the usual bounds guard (so the passes that look for a guard see one).
"""

from __future__ import annotations

from cubejit.ir import nodes as n
from cubejit.ir.types import ArrayType, TensorType, bool_, f32, i32, i64, u32

UNIT = n.Var("i", u32)
K = n.Var("k", i32)
S = n.Var("s", f32)
FLAG = n.Var("flag", bool_)
X_I = n.Load("x", UNIT, f32)


def _assign(name: str, e: n.Expr) -> tuple[n.Stmt, ...]:
    return (n.Assign(name, e),)


SAMPLES: dict[type, tuple[n.Stmt, ...]] = {
    n.Const: _assign("s", n.Const(1.5, f32)),
    n.Var: _assign("s", n.Var("a", f32)),
    n.PositionOf: _assign("j", n.PositionOf(n.Position.CUBE_POS_X)),
    n.Length: _assign("j", n.Length("x")),
    n.Shape: _assign("j", n.Shape("t", 1)),
    n.Stride: _assign("j", n.Stride("t", 0)),
    n.TensorIndex: _assign("s", n.Load("t", n.TensorIndex("t", (K, UNIT)), f32)),
    n.Load: _assign("s", X_I),
    n.Unary: _assign("flag", n.Unary(n.UnaryOp.NOT, FLAG, bool_)),
    n.Binary: _assign("s", n.Binary(n.BinaryOp.MUL, n.Var("a", f32), X_I, f32)),
    n.Cast: _assign("k", n.Cast(S, i32)),
    n.Bitcast: _assign("k", n.Bitcast(S, i32)),
    n.Math: _assign("s", n.Math(n.MathFn.SQRT, (X_I,), f32)),
    n.Select: _assign("s", n.Select(FLAG, S, X_I, f32)),
    n.Assign: _assign("k", n.Const(3, i32)),
    n.Store: (n.Store("out", UNIT, n.Binary(n.BinaryOp.ADD, X_I, S, f32)),),
    n.If: (n.If(FLAG, _assign("s", X_I), _assign("s", n.Const(0.0, f32))),),
    n.RangeFor: (
        n.RangeFor(
            "k",
            n.Const(0, i32),
            n.Const(4, i32),
            n.Const(1, i32),
            _assign("s", n.Binary(n.BinaryOp.ADD, S, n.Cast(K, f32), f32)),
        ),
    ),
    n.While: (n.While(n.Binary(n.BinaryOp.LT, S, n.Const(4.0, f32), bool_), _assign("s", X_I)),),
    n.Break: (n.While(n.Const(True, bool_), (n.Break(),)),),
    n.Continue: (
        n.RangeFor("k", n.Const(0, i32), n.Const(2, i32), n.Const(1, i32), (n.Continue(),)),
    ),
    n.Return: (n.If(FLAG, (n.Return(),)),),
    n.Atomic: (
        n.Atomic(n.AtomicOp.ADD, "hist", n.Const(0, u32), (n.Const(1, u32),), "j"),
        n.Atomic(n.AtomicOp.STORE, "hist", n.Const(1, u32), (n.Var("j", u32),), None),
    ),
    n.SyncCube: (n.Store("tile", n.PositionOf(n.Position.UNIT_POS), S), n.SyncCube()),
    n.SyncPlane: (n.SyncPlane(),),
    n.Print: (n.Print(("s = ", " at ", " flag ", "%"), (S, UNIT, FLAG)),),
    n.BoundsFailure: (
        n.If(
            FLAG,
            (n.BoundsFailure(0, n.Cast(K, i64), n.Const(4, i64)), n.Return()),
        ),
    ),
    n.PlaneOp: (
        n.PlaneOp(n.PlaneFn.SUM, "s", (S,)),
        n.PlaneOp(n.PlaneFn.SHUFFLE_DOWN, "s", (S, n.Const(1, u32))),
    ),
}
"""A block holding an instance of each node class."""

COLLECTIVES = (n.SyncCube, n.SyncPlane, n.PlaneOp)
"""Kinds every unit of a group must reach: a sample holding one runs before the guard."""

_PRELUDE = (
    n.Assign("s", n.Const(0.5, f32)),
    n.Assign("k", n.Const(1, i32)),
    n.Assign("j", n.Const(0, u32)),
    n.Assign("flag", n.Binary(n.BinaryOp.GT, n.Var("a", f32), n.Const(0.0, f32), bool_)),
)


def sample_kernel(block: tuple[n.Stmt, ...], guarded: bool) -> n.KernelIR:
    """A valid kernel running ``block``: with ``guarded``, under ``if i < out.len()``."""
    together = [s for s in block if isinstance(s, COLLECTIVES)]
    if together:
        prelude, block, tail = (*_PRELUDE, *block), (), (n.Store("out", UNIT, S),)
    else:
        prelude, tail = (), (*_PRELUDE, *block, n.Store("out", UNIT, S))
    work = tail
    if guarded:
        bound = n.Binary(n.BinaryOp.LT, UNIT, n.Length("out"), bool_)
        work = (n.If(bound, work),)
    work = (*prelude, *work)
    return n.KernelIR(
        "samples.kernel",
        (
            n.Param("a", f32),
            n.Param("x", ArrayType(f32)),
            n.Param("out", ArrayType(f32)),
            n.Param("t", TensorType(f32, 2)),
            n.Param("hist", ArrayType(u32, atomic=True)),
        ),
        (
            n.Local("i", u32),
            n.Local("j", u32),
            n.Local("s", f32),
            n.Local("k", i32),
            n.Local("flag", bool_),
        ),
        (n.Assign("i", n.PositionOf(n.Position.ABSOLUTE_POS)), *work),
        (n.Buffer("tile", n.BufferKind.SHARED, f32, 64),),
    )
