"""Several cubes in one CUDA thread, so that each thread keeps enough loads in flight.

A kernel that moves one 4-byte element per unit, one unit per CUDA thread, keeps too few bytes
in flight to fill a GPU's memory (Little's law): LANGUAGE.md's saxpy reaches under 80% of a
device-to-device copy on an H200. The *no-alias* form of a kernel (the artifact variant
:data:`NO_ALIAS`) runs :data:`FACTOR` consecutive cubes along x in each CUDA block: block ``b``
runs cubes ``b * FACTOR`` to ``b * FACTOR + FACTOR - 1`` of the user's launch, thread ``t`` unit
``t`` of each, so the units of one cube are still consecutive threads and accesses stay
coalesced. Every position of every unit is computed as the user's launch defines it (the launch
passes its cube count along x as a last kernel parameter). That is exact because units cannot
communicate: the language has no shared memory and no barrier, so which thread runs a unit is
not observable.

When every unit of a thread exists and passes the kernel's bounds guard (see
:func:`~cubejit.backends.unit_loop.plan_unit_loop`), the units run unguarded, one after another,
and where their statements allow it every load of every unit comes before any store: the loads
are then in flight together. Moving a load before another unit's store is exact only when no
array the kernel writes overlaps another array argument, which the launch checks before it
takes this variant. A thread whose units straddle the bound runs each unit under its guard.

A kernel is coarsened when its cubes are one-dimensional, its guard has a bound, it has no
tensor parameter (whose overlap a launch does not check) and its body, without the guard, has
no loop and no ``return``; any other kernel keeps one unit per thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from cubejit.backends.unit_loop import plan_unit_loop
from cubejit.ir import nodes as ir
from cubejit.ir.types import ArrayType, Scalar, bool_, u32

FACTOR = 4
"""Cubes along x that one CUDA block of a coarsened kernel runs."""

NO_ALIAS = True
"""The artifact variant for launches in which no array the kernel writes overlaps another array
argument; ``None`` is the variant for any launch."""

_LOOPS_AND_RETURNS = (ir.RangeFor, ir.While, ir.Return, ir.Break, ir.Continue)
_GIVEN = (ir.Position.CUBE_POS_X, ir.Position.CUBE_COUNT_X)
"""Positions of a unit that are the names the wrapper declares for every thread."""


@dataclass(frozen=True, slots=True)
class Coarsened:
    """The body of one CUDA thread of a coarsened kernel, and what its wrapper declares.

    ``kernel`` is IR the shared walker emits: its parameters are the kernel's, then the names
    the wrapper declares itself (:attr:`count`, :attr:`cubes`, :attr:`positions`), all ``u32``;
    its locals are each unit's copies of the kernel's locals and the thread's own.
    """

    kernel: ir.KernelIR
    count: str
    """The extra, last kernel parameter: the user's cube count along x."""
    cubes: tuple[str, ...]
    """The index along x of each unit's cube, by unit."""
    positions: tuple[tuple[str, ir.Position, int], ...]
    """``(name, position, unit)``: ``name`` holds ``position`` of unit ``unit``."""


def written_arrays(kernel: ir.KernelIR) -> frozenset[str]:
    """The array parameters ``kernel`` stores to."""
    return frozenset(s.array for s in ir.walk_stmts(kernel.body) if isinstance(s, ir.Store))


def coarsen(kernel: ir.KernelIR, cube_dim: tuple[int, int, int]) -> Coarsened | None:
    """``kernel`` with :data:`FACTOR` cubes per CUDA block, for cubes of ``cube_dim``; ``None``
    when the kernel keeps one unit per thread (see the module's doc)."""
    if cube_dim[1:] != (1, 1) or kernel.tensors():
        return None
    plan = plan_unit_loop(kernel)
    if plan.bound is None:
        return None
    if any(isinstance(s, _LOOPS_AND_RETURNS) for s in ir.walk_stmts(plan.body)):
        return None
    names = _Names(kernel)
    count = names.fresh("cube_count_x")
    cubes = tuple(names.fresh(f"cube_pos_x_{k}") for k in range(FACTOR))
    used = {e.which for e in ir.walk_exprs(plan.body) if isinstance(e, ir.PositionOf)}
    used.add(plan.lead)
    ordered = [p for p in ir.Position if p in used and p not in _GIVEN]
    by_unit = [
        {
            ir.Position.CUBE_POS_X: cubes[k],
            ir.Position.CUBE_COUNT_X: count,
            **{p: names.fresh(f"{p.value.lower()}_{k}") for p in ordered},
        }
        for k in range(FACTOR)
    ]
    assigned = _assigned(plan.body)
    params = {p.name: p.type for p in kernel.params}
    locals_ = [ir.Local(names.fresh(f"live_{k}"), bool_) for k in range(FACTOR)]
    units = []
    for k in range(FACTOR):
        renames = {}
        start: list[ir.Stmt] = []
        for local in kernel.locals:
            renames[local.name] = names.fresh(f"{local.name}_{k}")
            locals_.append(ir.Local(renames[local.name], local.type))
        for name in sorted(assigned & params.keys()):
            scalar = params[name]
            assert not isinstance(scalar, ArrayType)
            renames[name] = names.fresh(f"{name}_{k}")
            locals_.append(ir.Local(renames[name], scalar))
            start.append(ir.Assign(renames[name], ir.Var(name, scalar)))
        rewrite = _Rewrite(renames, by_unit[k])
        units.append((*start, *rewrite.block(plan.body)))
    lives = []
    head: list[ir.Stmt] = []
    for k in range(FACTOR):
        exists = _lt(ir.Var(cubes[k], u32), ir.Var(count, u32))
        below = _lt(ir.Var(by_unit[k][plan.lead], u32), plan.bound)
        lives.append(ir.Var(locals_[k].name, bool_))
        head.append(ir.Assign(locals_[k].name, ir.Binary(ir.BinaryOp.AND, exists, below, bool_)))
    every = lives[0]
    for live in lives[1:]:
        every = ir.Binary(ir.BinaryOp.AND, every, live, bool_)
    elems = {p.name: p.type.elem for p in kernel.params if isinstance(p.type, ArrayType)}
    fast = _loads_first(units, elems, names, locals_)
    each = tuple(ir.If(live, unit) for live, unit in zip(lives, units, strict=True))
    extra = (count, *cubes, *(unit[p] for unit in by_unit for p in ordered))
    body = ir.KernelIR(
        kernel.name,
        (*kernel.params, *(ir.Param(name, u32) for name in extra)),
        tuple(locals_),
        (*head, ir.If(every, fast, each)),
    )
    positions = tuple((unit[p], p, k) for k, unit in enumerate(by_unit) for p in ordered)
    return Coarsened(body, count, cubes, positions)


def _lt(lhs: ir.Expr, rhs: ir.Expr) -> ir.Binary:
    return ir.Binary(ir.BinaryOp.LT, lhs, rhs, bool_)


def _assigned(block: Iterable[ir.Stmt]) -> set[str]:
    return {s.name for s in ir.walk_stmts(tuple(block)) if isinstance(s, ir.Assign)}


def _loads_first(
    units: list[tuple[ir.Stmt, ...]],
    elems: dict[str, Scalar],
    names: _Names,
    locals_: list[ir.Local],
) -> tuple[ir.Stmt, ...]:
    """Every unit's statements, the stores of all after everything else when that is exact
    (a unit of assignments and stores that reads no array it stored before); else the units
    one after another."""
    if not all(_stores_last_is_exact(unit) for unit in units):
        return tuple(s for unit in units for s in unit)
    first: list[ir.Stmt] = []
    last: list[ir.Stmt] = []
    for k, unit in enumerate(units):
        for j, s in enumerate(unit):
            if isinstance(s, ir.Assign):
                first.append(s)
                continue
            assert isinstance(s, ir.Store)
            later = _assigned(unit[j + 1 :])
            parts = []
            for what, value, t in (
                ("index", s.index, s.index.type),
                ("stored", s.value, elems[s.array]),
            ):
                if isinstance(value, ir.Const) or (
                    isinstance(value, ir.Var) and value.name not in later
                ):
                    parts.append(value)
                    continue
                temp = names.fresh(f"{what}_{k}_{j}")
                locals_.append(ir.Local(temp, t))
                first.append(ir.Assign(temp, value))
                parts.append(ir.Var(temp, t))
            last.append(ir.Store(s.array, parts[0], parts[1]))
    return (*first, *last)


def _stores_last_is_exact(unit: tuple[ir.Stmt, ...]) -> bool:
    stored: set[str] = set()
    for s in unit:
        if not isinstance(s, ir.Assign | ir.Store):
            return False
        reads = {e.array for e in ir.walk_exprs((s,)) if isinstance(e, ir.Load)}
        if reads & stored:
            return False
        if isinstance(s, ir.Store):
            stored.add(s.array)
    return True


class _Names:
    """Fresh IR names: none is a name of the kernel or one given before."""

    def __init__(self, kernel: ir.KernelIR) -> None:
        self.taken = {p.name for p in kernel.params} | {local.name for local in kernel.locals}

    def fresh(self, base: str) -> str:
        name = base
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name


class _Rewrite:
    """One unit's statements: its own copies of the names it assigns, its positions read from
    the names the wrapper declares."""

    def __init__(self, renames: dict[str, str], positions: dict[ir.Position, str]) -> None:
        self.renames = renames
        self.positions = positions

    def block(self, stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        return tuple(self.stmt(s) for s in stmts)

    def stmt(self, s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, ir.Assign):
            return ir.Assign(self.renames.get(s.name, s.name), self.expr(s.value))
        if isinstance(s, ir.Store):
            return ir.Store(s.array, self.expr(s.index), self.expr(s.value))
        assert isinstance(s, ir.If)
        return ir.If(self.expr(s.cond), self.block(s.then), self.block(s.orelse))

    def expr(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Var):
            return ir.Var(self.renames.get(e.name, e.name), e.type)
        if isinstance(e, ir.PositionOf):
            return ir.Var(self.positions[e.which], u32)
        if isinstance(e, ir.Load):
            return replace(e, index=self.expr(e.index))
        if isinstance(e, ir.Unary):
            return replace(e, operand=self.expr(e.operand))
        if isinstance(e, ir.Binary):
            return replace(e, lhs=self.expr(e.lhs), rhs=self.expr(e.rhs))
        if isinstance(e, ir.Cast):
            return replace(e, value=self.expr(e.value))
        if isinstance(e, ir.Math):
            return replace(e, args=tuple(self.expr(a) for a in e.args))
        if isinstance(e, ir.Select):
            return ir.Select(self.expr(e.cond), self.expr(e.if_true), self.expr(e.if_false), e.type)
        return e
