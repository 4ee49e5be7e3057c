"""How a backend runs a row of units: which position counts them, and where the row may end.

A cube's units along x form a row. The C backend runs a row as one counted loop whose counter is
a position (``ABSOLUTE_POS`` or ``ABSOLUTE_POS_X``), so that the C compiler sees indexing by that
position as affine and vectorises the loop; the CUDA backend runs several cubes of a row in one
thread (:mod:`cubejit.backends.cuda.coarsening`), all of them unguarded when every one is below
the bound. The CPU launch keeps every position below ``2**32``, so its counter never wraps.

Most kernels start with a bounds guard: ``i = ABSOLUTE_POS`` then ``if i < out.len(): ...``
(or ``if i >= n: return`` followed by the work). :func:`plan_unit_loop` recognises the guard
when its bound is the same for every unit of the launch and hoists it out as ``bound``, leaving
the unit straight-line code. It asks the IR's traits (:mod:`cubejit.ir.traits`) whether that is
exact: every statement before the guard must be local to the unit (it writes no buffer, waits
for no other unit, never leaves), so a unit the guard stops did nothing observable; and the
guarded work must neither synchronise nor need its cube or plane converged, since the units
past the bound no longer run at all. The bound must be the same for the whole launch, as the
uniformity analysis (:mod:`cubejit.ir.uniformity`) says, and read no buffer and no position:
the launch computes it once, before any unit runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cubejit.ir import nodes as ir
from cubejit.ir.traits import assignments, block_traits, expr_reads, traits
from cubejit.ir.traversal import map_expr, walk_expr, walk_exprs
from cubejit.ir.types import u32
from cubejit.ir.uniformity import Uniform, Uniformity, analyse
from cubejit.ir.values import Value, declared

_LEADS = (ir.Position.ABSOLUTE_POS, ir.Position.ABSOLUTE_POS_X)


@dataclass(frozen=True, slots=True)
class UnitLoop:
    """The plan of a kernel's row loop."""

    lead: ir.Position
    """The position the row loop counts: ``ABSOLUTE_POS`` or ``ABSOLUTE_POS_X``."""
    bound: ir.Expr | None
    """A ``u32`` the same for every unit: units whose ``lead`` is not below it do nothing, so
    the row stops there. None when every unit of a row runs."""
    body: tuple[ir.Stmt, ...]
    """The unit's statements, without the guard ``bound`` replaces."""


def plan_unit_loop(kernel: ir.KernelIR) -> UnitLoop:
    """The row loop of ``kernel``: its guard hoisted into ``bound`` where that is exact."""
    used = {e.which for e in walk_exprs(kernel.body) if isinstance(e, ir.PositionOf)}
    only_x = ir.Position.ABSOLUTE_POS_X in used and ir.Position.ABSOLUTE_POS not in used
    default = UnitLoop(_LEADS[1] if only_x else _LEADS[0], None, kernel.body)
    values = declared(kernel)
    writes = assignments(kernel.body, values)
    body = kernel.body
    start = 0
    while start < len(body) and traits(body[start], values).is_local:
        start += 1
    if start == len(body) or not isinstance(body[start], ir.If):
        return default
    uniformity = analyse(kernel)
    aliases: dict[str, ir.Position] = {}
    known: dict[str, ir.Expr | None] = {p.name: None for p in kernel.params if writes[p.name] == 0}
    for s in body[:start]:
        if not isinstance(s, ir.Assign) or writes[s.name] != 1:
            continue
        if isinstance(s.value, ir.PositionOf) and s.value.which in _LEADS:
            aliases[s.name] = s.value.which
        elif _invariant(s.value, known, uniformity, values):
            known[s.name] = _inline(s.value, known)
    guard = body[start]
    assert isinstance(guard, ir.If)
    split = _split_guard(guard.cond, aliases, known, uniformity, values)
    if split is None or guard.orelse:
        return default
    lead, bound, runs_when_true = split
    if runs_when_true and start + 1 == len(body):
        work = guard.then
    elif not runs_when_true and guard.then == (ir.Return(),):
        work = body[start + 1 :]
    else:
        return default
    done = block_traits(work, values)
    if done.synchronises is not None or done.converged is not None:
        return default
    return UnitLoop(lead, bound, (*body[:start], *work))


def _split_guard(
    cond: ir.Expr,
    aliases: dict[str, ir.Position],
    known: dict[str, ir.Expr | None],
    uniformity: Uniformity,
    values: Mapping[str, Value],
) -> tuple[ir.Position, ir.Expr, bool] | None:
    """``(lead, bound, runs_when_true)`` when ``cond`` is ``lead < bound`` (the unit works when
    it holds) or ``lead >= bound`` (the unit stops when it holds), either way round."""
    if not isinstance(cond, ir.Binary):
        return None
    forms = {
        ir.BinaryOp.LT: (cond.lhs, cond.rhs, True),
        ir.BinaryOp.GT: (cond.rhs, cond.lhs, True),
        ir.BinaryOp.GE: (cond.lhs, cond.rhs, False),
        ir.BinaryOp.LE: (cond.rhs, cond.lhs, False),
    }
    if cond.op not in forms:
        return None
    position, bound, runs_when_true = forms[cond.op]
    if isinstance(position, ir.PositionOf) and position.which in _LEADS:
        lead = position.which
    elif isinstance(position, ir.Var) and position.name in aliases:
        lead = aliases[position.name]
    else:
        return None
    if bound.type != u32 or not _invariant(bound, known, uniformity, values):
        return None
    return lead, _inline(bound, known), runs_when_true


def _invariant(
    e: ir.Expr,
    known: dict[str, ir.Expr | None],
    uniformity: Uniformity,
    values: Mapping[str, Value],
) -> bool:
    """Whether the launch can compute ``e`` once for every unit: it is the same for the whole
    launch, reads no buffer and no position, and every name it reads is ``known`` (a scalar
    parameter the kernel never assigns, or a local assigned once from such values)."""
    subs = list(walk_expr(e))
    return (
        uniformity.of(e) is Uniform.LAUNCH
        and not expr_reads(e, values)
        and all(sub.name in known for sub in subs if isinstance(sub, ir.Var))
        and not any(isinstance(sub, ir.PositionOf) for sub in subs)
    )


def _inline(e: ir.Expr, known: dict[str, ir.Expr | None]) -> ir.Expr:
    """``e`` with each known local replaced by its value, so it reads parameters only."""

    def substitute(sub: ir.Expr) -> ir.Expr:
        if isinstance(sub, ir.Var):
            value = known.get(sub.name)
            return sub if value is None else value
        return sub

    return map_expr(e, substitute)
