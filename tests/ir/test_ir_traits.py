"""The traits of each statement kind: what it reads and writes (which buffer, which space),
what it assigns, whether it synchronises, needs convergence or leaves."""

from __future__ import annotations

import typing

import pytest

from cubejit.ir import nodes as n
from cubejit.ir.traits import (
    Access,
    Exit,
    Group,
    Traits,
    assignments,
    block_traits,
    expr_reads,
    own_traits,
    reads_memory,
    traits,
)
from cubejit.ir.types import ArrayType, bool_, f32, i32, i64, u32
from cubejit.ir.values import Item, MemorySpace, ValueKind, declared

KERNEL = n.KernelIR(
    "traits.kernel",
    (
        n.Param("a", f32),
        n.Param("x", ArrayType(f32)),
        n.Param("out", ArrayType(f32)),
        n.Param("hist", ArrayType(u32, atomic=True)),
    ),
    (n.Local("i", u32), n.Local("s", f32), n.Local("k", i32)),
    (),
    (n.Buffer("tile", n.BufferKind.SHARED, f32, 32),),
)
VALUES = declared(KERNEL)
UNIT = n.Var("i", u32)
X_I = n.Load("x", UNIT, f32)
X = Access("x", MemorySpace.GLOBAL)
OUT = Access("out", MemorySpace.GLOBAL)
LOOP_END = n.Const(4, i32)
HIST = Access("hist", MemorySpace.GLOBAL)
TILE = Access("tile", MemorySpace.SHARED)


def _range(body: tuple[n.Stmt, ...]) -> n.RangeFor:
    return n.RangeFor("k", n.Const(0, i32), LOOP_END, n.Const(1, i32), body)


CASES = {
    "assign": (n.Assign("s", X_I), Traits(frozenset((X,)), assigns=frozenset(("s",)))),
    "store": (
        n.Store("out", UNIT, X_I),
        Traits(frozenset((X,)), frozenset((OUT,))),
    ),
    "if": (
        n.If(n.Binary(n.BinaryOp.GT, X_I, n.Const(0.0, f32), bool_), (n.Store("out", UNIT, X_I),)),
        Traits(frozenset((X,)), frozenset((OUT,))),
    ),
    "range-for": (
        _range((n.Assign("s", n.Var("a", f32)), n.Break())),
        Traits(assigns=frozenset(("k", "s"))),
    ),
    "while": (
        n.While(n.Const(True, bool_), (n.Continue(), n.Return())),
        Traits(exits=frozenset((Exit.RETURN,))),
    ),
    "break": (n.Break(), Traits(exits=frozenset((Exit.BREAK,)))),
    "continue": (n.Continue(), Traits(exits=frozenset((Exit.CONTINUE,)))),
    "return": (n.Return(), Traits(exits=frozenset((Exit.RETURN,)))),
    "atomic": (
        n.Atomic(n.AtomicOp.ADD, "hist", UNIT, (n.Const(1, u32),), "i"),
        Traits(frozenset((HIST,)), frozenset((HIST,)), frozenset(("i",))),
    ),
    "atomic load": (
        n.Atomic(n.AtomicOp.LOAD, "hist", n.Cast(X_I, u32), (), "i"),
        Traits(frozenset((HIST, X)), assigns=frozenset(("i",))),
    ),
    "sync_cube": (n.SyncCube(), Traits(synchronises=Group.CUBE, converged=Group.CUBE)),
    "sync_plane": (n.SyncPlane(), Traits(synchronises=Group.PLANE, converged=Group.PLANE)),
    "plane operation": (
        n.PlaneOp(n.PlaneFn.SUM, "s", (n.Load("tile", UNIT, f32),)),
        Traits(frozenset((TILE,)), assigns=frozenset(("s",)), converged=Group.PLANE),
    ),
    "print": (n.Print(("x = ", ""), (X_I,)), Traits(frozenset((X,)), outputs=True)),
    "bounds failure": (
        n.BoundsFailure(0, n.Const(9, i64), n.Const(4, i64)),
        Traits(outputs=True),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_each_statement_kind_declares_what_it_does(case: str) -> None:
    stmt, expected = CASES[case]
    assert traits(stmt, VALUES) == expected


def test_every_statement_kind_has_a_case() -> None:
    kinds = {type(stmt) for stmt, _ in CASES.values()}
    assert kinds == set(typing.get_args(n.Stmt))


def test_a_compound_statement_alone_is_only_what_it_evaluates() -> None:
    guard = CASES["if"][0]
    assert own_traits(guard, VALUES) == Traits(frozenset((X,)))
    assert own_traits(_range((n.Return(),)), VALUES) == Traits(assigns=frozenset(("k",)))


def test_a_return_leaves_a_loop_but_break_and_continue_stay_in_it() -> None:
    loop = _range((n.If(n.Const(True, bool_), (n.Break(),), (n.Return(),)), n.Continue()))
    assert traits(loop, VALUES).exits == {Exit.RETURN}
    assert not traits(loop, VALUES).is_local


def test_only_assignments_and_reads_are_local_to_the_unit() -> None:
    assert traits(CASES["assign"][0], VALUES).is_local
    assert traits(CASES["range-for"][0], VALUES).is_local
    for case in ("store", "if", "while", "break", "return"):
        assert not traits(CASES[case][0], VALUES).is_local, case


def test_reads_come_from_every_expression_a_statement_evaluates() -> None:
    nested = n.Math(n.MathFn.MAX, (n.Load("out", n.Cast(X_I, u32), f32), n.Var("s", f32)), f32)
    assert expr_reads(nested, VALUES) == {X, OUT}
    assert expr_reads(n.Length("x"), VALUES) == frozenset()
    stmt = n.Store("out", n.Cast(X_I, u32), nested)
    assert traits(stmt, VALUES).spaces() == {MemorySpace.GLOBAL}


def test_a_block_joins_its_statements_and_counts_assignments() -> None:
    block = (
        n.Assign("s", X_I),
        n.Store("out", UNIT, n.Var("s", f32)),
        _range((n.Assign("s", X_I),)),
    )
    joined = block_traits(block, VALUES)
    assert joined.reads == {X} and joined.writes == {OUT}
    assert joined.assigns == {"s", "k"}
    assert assignments(block, VALUES) == {"s": 2, "k": 1}


def test_values_say_their_kind_item_and_space() -> None:
    assert VALUES["x"].kind is ValueKind.GLOBAL_BUFFER
    assert (VALUES["x"].space, VALUES["x"].rank, VALUES["x"].item) == (
        MemorySpace.GLOBAL,
        1,
        Item(f32),
    )
    assert VALUES["a"].kind is ValueKind.SCALAR_PARAM and VALUES["a"].space is None
    assert VALUES["i"].kind is ValueKind.LOCAL_SCALAR and VALUES["i"].item == Item(u32, 1)
    assert str(Item(f32)) == "f32" and str(Item(f32, 4)) == "Line[f32, 4]"


def test_a_scalar_is_no_buffer_to_read() -> None:
    with pytest.raises(ValueError, match="a is a scalar parameter, not a buffer"):
        expr_reads(n.Load("a", UNIT, f32), VALUES)


def test_an_expression_reads_memory_when_any_operand_loads() -> None:
    assert reads_memory(n.Cast(n.Unary(n.UnaryOp.NEG, X_I, f32), i32))
    assert not reads_memory(n.Binary(n.BinaryOp.ADD, n.Length("x"), UNIT, u32))
