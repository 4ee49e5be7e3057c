"""The checked variant's pass: every access checked before the statement making it, under the
condition it is made, each check a numbered site with its buffer and source line."""

from __future__ import annotations

from cubejit.ir import nodes as n
from cubejit.ir.bounds import Site, checked
from cubejit.ir.traversal import walk_stmts
from cubejit.ir.types import ArrayType, bool_, f32, i64, u32
from cubejit.ir.validate import validate
from cubejit.ir.values import ValueKind

UNIT = n.Var("i", u32)
X = n.Param("x", ArrayType(f32))
OUT = n.Param("out", ArrayType(f32))


def _kernel(*body: n.Stmt, allocations: tuple[n.Buffer, ...] = ()) -> n.KernelIR:
    assigned = {s.name for s in walk_stmts(body) if isinstance(s, n.Assign)}
    locals_ = tuple(n.Local(name, t) for name, t in (("i", u32), ("s", f32)) if name in assigned)
    return n.KernelIR("k", (X, OUT), locals_, body, allocations)


def _failures(block: tuple[n.Stmt, ...]) -> list[n.BoundsFailure]:
    return [s for s in walk_stmts(block) if isinstance(s, n.BoundsFailure)]


def test_a_store_checks_its_value_reads_then_its_own_index_each_at_its_line() -> None:
    kernel = _kernel(
        n.Assign("i", n.PositionOf(n.Position.ABSOLUTE_POS)),
        n.Store("out", UNIT, n.Load("x", UNIT, f32, "k.py:7"), "k.py:7"),
    )
    done, sites = checked(kernel)
    validate(done)
    assert sites == (Site("x", None, "k.py:7"), Site("out", None, "k.py:7"))
    guard = done.body[1]
    assert isinstance(guard, n.If) and guard.then[-1] == n.Return()
    assert [f.site for f in _failures(done.body)] == [0, 1]
    assert done.body[-1] == kernel.body[-1]


def test_an_access_under_a_condition_is_checked_under_it() -> None:
    cond = n.Binary(n.BinaryOp.LT, UNIT, n.Length("x"), bool_)
    guarded = n.Select(cond, n.Load("x", UNIT, f32), n.Const(0.0, f32), f32)
    done, sites = checked(_kernel(n.Assign("i", n.Const(3, u32)), n.Assign("s", guarded)))
    validate(done)
    assert len(sites) == 1
    outer = done.body[1]
    assert isinstance(outer, n.If) and outer.cond == cond
    assert _failures(outer.then)


def test_a_while_condition_is_checked_before_each_evaluation_continue_included() -> None:
    cond = n.Binary(n.BinaryOp.GT, n.Load("x", UNIT, f32), n.Const(0.0, f32), bool_)
    step = n.Assign("i", n.Binary(n.BinaryOp.ADD, UNIT, n.Const(1, u32), u32))
    loop = n.While(cond, (step, n.If(cond, (n.Continue(),)), step))
    done, _ = checked(_kernel(n.Assign("i", n.Const(0, u32)), loop))
    validate(done)
    checked_loop = next(s for s in done.body if isinstance(s, n.While))
    assert isinstance(checked_loop.body[-1], n.If)
    continues = [
        s for s in walk_stmts(checked_loop.body) if isinstance(s, n.If) and n.Continue() in s.then
    ]
    assert continues and isinstance(continues[0].then[0], n.If)


def test_shared_memory_is_checked_against_its_size() -> None:
    tile = n.Buffer("tile", n.BufferKind.SHARED, f32, 16)
    kernel = _kernel(
        n.Assign("i", n.PositionOf(n.Position.UNIT_POS)),
        n.Store("tile", UNIT, n.Const(1.0, f32), "k.py:3"),
        allocations=(tile,),
    )
    done, sites = checked(kernel)
    validate(done)
    assert sites == (Site("tile", None, "k.py:3", ValueKind.SHARED_BUFFER),)
    assert _failures(done.body)[0].length == n.Const(16, i64)
