"""How a backend runs a row of units: which position counts them, and where the row may end.

A cube's units along x form a row. The C backend runs a row as one counted loop whose counter is
a position (``ABSOLUTE_POS`` or ``ABSOLUTE_POS_X``), so that the C compiler sees indexing by that
position as affine and vectorises the loop; the CUDA backend runs several cubes of a row in one
thread (:mod:`cubejit.backends.cuda.coarsening`), all of them unguarded when every one is below
the bound. The CPU launch keeps every position below ``2**32``, so its counter never wraps.

Most kernels start with a bounds guard: ``i = ABSOLUTE_POS`` then ``if i < out.len(): ...``
(or ``if i >= n: return`` followed by the work). :func:`plan_unit_loop` recognises the guard
when its bound is the same for every unit and hoists it out as ``bound``, leaving the unit
straight-line code. That is exact: a unit the guard stops does nothing observable, since
all it runs before the guard is assignments to its own locals, and expressions have no effects.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from cubejit.ir import nodes as ir
from cubejit.ir.types import u32

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
    used = {e.which for e in ir.walk_exprs(kernel.body) if isinstance(e, ir.PositionOf)}
    only_x = ir.Position.ABSOLUTE_POS_X in used and ir.Position.ABSOLUTE_POS not in used
    default = UnitLoop(_LEADS[1] if only_x else _LEADS[0], None, kernel.body)
    writes = _assignments(kernel.body)
    body = kernel.body
    start = 0
    while start < len(body) and isinstance(body[start], ir.Assign):
        start += 1
    if start == len(body) or not isinstance(body[start], ir.If):
        return default
    aliases: dict[str, ir.Position] = {}
    known = {p.name: None for p in kernel.params if writes[p.name] == 0}
    for s in body[:start]:
        assert isinstance(s, ir.Assign)
        if writes[s.name] != 1:
            continue
        if isinstance(s.value, ir.PositionOf) and s.value.which in _LEADS:
            aliases[s.name] = s.value.which
        elif _invariant(s.value, known):
            known[s.name] = _inline(s.value, known)
    guard = body[start]
    assert isinstance(guard, ir.If)
    split = _split_guard(guard.cond, aliases, known)
    if split is None or guard.orelse:
        return default
    lead, bound, runs_when_true = split
    if runs_when_true and start + 1 == len(body):
        return UnitLoop(lead, bound, (*body[:start], *guard.then))
    if not runs_when_true and guard.then == (ir.Return(),):
        return UnitLoop(lead, bound, (*body[:start], *body[start + 1 :]))
    return default


def _assignments(block: tuple[ir.Stmt, ...]) -> Counter[str]:
    """How many statements of ``block`` write each name."""
    writes: Counter[str] = Counter()
    for s in ir.walk_stmts(block):
        if isinstance(s, ir.Assign):
            writes[s.name] += 1
        elif isinstance(s, ir.RangeFor):
            writes[s.var] += 1
    return writes


def _split_guard(
    cond: ir.Expr, aliases: dict[str, ir.Position], known: dict[str, ir.Expr | None]
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
    if bound.type != u32 or not _invariant(bound, known):
        return None
    return lead, _inline(bound, known), runs_when_true


def _invariant(e: ir.Expr, known: dict[str, ir.Expr | None]) -> bool:
    """Whether ``e`` has one value in every unit of a launch: it reads lengths, constants and
    ``known`` names (scalar parameters the kernel never assigns, locals assigned once from such
    values), never an array element or a position."""
    if isinstance(e, ir.Var):
        return e.name in known
    if isinstance(e, ir.Load | ir.PositionOf):
        return False
    return all(_invariant(sub, known) for sub in ir.sub_exprs(e))


def _inline(e: ir.Expr, known: dict[str, ir.Expr | None]) -> ir.Expr:
    """``e`` with each known local replaced by its value, so it reads parameters only."""
    if isinstance(e, ir.Var):
        value = known.get(e.name)
        return e if value is None else value
    if isinstance(e, ir.Unary):
        return replace(e, operand=_inline(e.operand, known))
    if isinstance(e, ir.Binary):
        return replace(e, lhs=_inline(e.lhs, known), rhs=_inline(e.rhs, known))
    if isinstance(e, ir.Cast | ir.Bitcast):
        return replace(e, value=_inline(e.value, known))
    if isinstance(e, ir.Math):
        return replace(e, args=tuple(_inline(a, known) for a in e.args))
    if isinstance(e, ir.Select):
        return ir.Select(*(_inline(x, known) for x in (e.cond, e.if_true, e.if_false)), e.type)
    return e
