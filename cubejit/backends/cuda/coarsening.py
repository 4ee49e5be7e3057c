"""Several cubes in one CUDA thread, so that each thread keeps enough loads in flight.

A kernel that moves one 4-byte element per unit, one unit per CUDA thread, keeps too few bytes
in flight to fill a GPU's memory (Little's law): LANGUAGE.md's saxpy reaches under 80% of a
device-to-device copy on an H200. The *no-alias* form of a kernel (the artifact variant
:data:`NO_ALIAS`) runs :data:`FACTOR` consecutive cubes along x in each CUDA block: block ``b``
runs cubes ``b * FACTOR`` to ``b * FACTOR + FACTOR - 1`` of the user's launch, thread ``t`` unit
``t`` of each, so the units of one cube are still consecutive threads and accesses stay
coalesced. Every position of every unit is computed as the user's launch defines it (the launch
passes its cube count along x as a last kernel parameter). That is exact only where the units
of a thread cannot tell that they share it: a kernel that declares shared memory or local
arrays, waits at a barrier or runs a plane operation is never coarsened (the traits say so),
and atomics on global memory stay atomic whichever thread runs them.

When every unit of a thread exists and passes the kernel's bounds guard (see
:func:`~cubejit.backends.unit_loop.plan_unit_loop`), the units run unguarded, one after another,
and where their statements allow it every load of every unit comes before any store: the loads
are then in flight together. Moving a load before another unit's store is exact only when no
array the kernel writes overlaps another array argument, which the launch checks before it
takes this variant. A thread whose units straddle the bound runs each unit under its guard.

Every decision is read from the IR's traits (:mod:`cubejit.ir.traits`). A kernel is coarsened
when its cubes are one-dimensional, its guard has a bound, and its guarded work touches global
memory only (a cube's shared memory would be shared by the cubes of a block), neither
synchronises nor needs its cube or plane converged (units of different cubes would wait for
each other), never leaves (no ``return``, no loop exit) and holds no loop. Within one unit, a
straight-line statement moves ahead of the unit's stores when its traits say it writes no
buffer and reads none the unit stored before; a store is split into its evaluation (moved
ahead) and its write. Any other kernel keeps one unit per thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import assert_never

from cubejit.backends.unit_loop import plan_unit_loop
from cubejit.ir import nodes as ir
from cubejit.ir.traits import Traits, assignments, block_traits, traits
from cubejit.ir.traversal import blocks, map_expr, walk_exprs
from cubejit.ir.types import bool_, u32
from cubejit.ir.values import MemorySpace, Value, ValueKind, declared

FACTOR = 4
"""Cubes along x that one CUDA block of a coarsened kernel runs."""

NO_ALIAS = True
"""The artifact variant for launches in which no array the kernel writes overlaps another array
argument; ``None`` is the variant for any launch."""

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
    """The global buffers ``kernel`` writes, as its traits say."""
    done = block_traits(kernel.body, declared(kernel))
    return frozenset(a.buffer for a in done.writes if a.space is MemorySpace.GLOBAL)


def _coarsenable(work: Traits) -> bool:
    """Whether units of several cubes may run ``work`` in one thread (see the module's doc)."""
    return (
        work.spaces() <= {MemorySpace.GLOBAL}
        and work.synchronises is None
        and work.converged is None
        and not work.exits
        and not work.outputs
    )


def coarsen(kernel: ir.KernelIR, cube_dim: tuple[int, int, int]) -> Coarsened | None:
    """``kernel`` with :data:`FACTOR` cubes per CUDA block, for cubes of ``cube_dim``; ``None``
    when the kernel keeps one unit per thread (see the module's doc)."""
    if cube_dim[1:] != (1, 1) or kernel.allocations:
        return None
    plan = plan_unit_loop(kernel)
    if plan.bound is None:
        return None
    values = declared(kernel)
    if not _coarsenable(block_traits(plan.body, values)):
        return None
    try:
        return _coarsen(kernel, plan.body, plan.lead, plan.bound, values)
    except _KeepOnePerThread:
        return None


def _coarsen(
    kernel: ir.KernelIR,
    work: tuple[ir.Stmt, ...],
    lead: ir.Position,
    bound: ir.Expr,
    values: Mapping[str, Value],
) -> Coarsened:
    names = _Names(kernel)
    count = names.fresh("cube_count_x")
    cubes = tuple(names.fresh(f"cube_pos_x_{k}") for k in range(FACTOR))
    used = {e.which for e in walk_exprs(work) if isinstance(e, ir.PositionOf)}
    used.add(lead)
    ordered = [p for p in ir.Position if p in used and p not in _GIVEN]
    by_unit = [
        {
            ir.Position.CUBE_POS_X: cubes[k],
            ir.Position.CUBE_COUNT_X: count,
            **{p: names.fresh(f"{p.name.lower()}_{k}") for p in ordered},
        }
        for k in range(FACTOR)
    ]
    assigned = set(assignments(work, values))
    params = {p.name for p in kernel.params if values[p.name].kind is ValueKind.SCALAR_PARAM}
    locals_ = [ir.Local(names.fresh(f"live_{k}"), bool_) for k in range(FACTOR)]
    units = []
    for k in range(FACTOR):
        renames = {}
        start: list[ir.Stmt] = []
        for local in kernel.locals:
            renames[local.name] = names.fresh(f"{local.name}_{k}")
            locals_.append(ir.Local(renames[local.name], local.type))
        for name in sorted(assigned & params):
            scalar = values[name].item.elem
            renames[name] = names.fresh(f"{name}_{k}")
            locals_.append(ir.Local(renames[name], scalar))
            start.append(ir.Assign(renames[name], ir.Var(name, scalar)))
        rewrite = _Rewrite(renames, by_unit[k])
        units.append((*start, *rewrite.block(work)))
    lives = []
    head: list[ir.Stmt] = []
    for k in range(FACTOR):
        exists = _lt(ir.Var(cubes[k], u32), ir.Var(count, u32))
        below = _lt(ir.Var(by_unit[k][lead], u32), bound)
        lives.append(ir.Var(locals_[k].name, bool_))
        head.append(ir.Assign(locals_[k].name, ir.Binary(ir.BinaryOp.AND, exists, below, bool_)))
    every: ir.Expr = lives[0]
    for live in lives[1:]:
        every = ir.Binary(ir.BinaryOp.AND, every, live, bool_)
    fast = _loads_first(units, values, names, locals_)
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


def _loads_first(
    units: list[tuple[ir.Stmt, ...]],
    values: Mapping[str, Value],
    names: _Names,
    locals_: list[ir.Local],
) -> tuple[ir.Stmt, ...]:
    """Every unit's statements, the stores of all after everything else when that is exact
    (see the module's doc); else the units one after another."""
    if not all(_stores_last_is_exact(unit, values) for unit in units):
        return tuple(s for unit in units for s in unit)
    first: list[ir.Stmt] = []
    last: list[ir.Stmt] = []
    for k, unit in enumerate(units):
        for j, s in enumerate(unit):
            if not isinstance(s, ir.Store):
                first.append(s)
                continue
            later = assignments(unit[j + 1 :], values)
            indices = s.index.indices if isinstance(s.index, ir.TensorIndex) else (s.index,)
            parts = []
            for what, value, t in (
                *(("index", index, index.type) for index in indices),
                ("stored", s.value, values[s.array].item.elem),
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
            index: ir.Expr = parts[0]
            if isinstance(s.index, ir.TensorIndex):
                index = ir.TensorIndex(s.index.tensor, tuple(parts[:-1]))
            last.append(ir.Store(s.array, index, parts[-1]))
    return (*first, *last)


def _stores_last_is_exact(unit: tuple[ir.Stmt, ...], values: Mapping[str, Value]) -> bool:
    """Whether every statement of ``unit`` may run before the unit's stores: each is
    straight-line (no nested block: branches keep the units in order), writes no buffer (or is
    a store, whose write alone stays last) and reads none stored before it."""
    stored: set[str] = set()
    for s in unit:
        if blocks(s):
            return False
        done = traits(s, values)
        if {a.buffer for a in done.reads} & stored:
            return False
        if not done.is_local and not isinstance(s, ir.Store):
            return False
        stored |= {a.buffer for a in done.writes}
    return True


class _KeepOnePerThread(Exception):
    """The work holds a statement a coarsened thread cannot repeat per unit."""


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
        if isinstance(s, ir.If):
            return ir.If(self.expr(s.cond), self.block(s.then), self.block(s.orelse))
        if isinstance(s, ir.Atomic):
            result = None if s.result is None else self.renames.get(s.result, s.result)
            args = tuple(self.expr(a) for a in s.args)
            return ir.Atomic(s.op, s.array, self.expr(s.index), args, result)
        if isinstance(
            s,
            ir.RangeFor
            | ir.While
            | ir.Break
            | ir.Continue
            | ir.Return
            | ir.SyncCube
            | ir.SyncPlane
            | ir.PlaneOp
            | ir.Print
            | ir.BoundsFailure,
        ):
            raise _KeepOnePerThread
        assert_never(s)

    def expr(self, e: ir.Expr) -> ir.Expr:
        return map_expr(e, self.rename)

    def rename(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Var):
            return ir.Var(self.renames.get(e.name, e.name), e.type)
        if isinstance(e, ir.PositionOf):
            return ir.Var(self.positions[e.which], u32)
        return e
