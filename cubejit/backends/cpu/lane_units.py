"""A lined unit's lanes run as units of their own, so GCC vectorises the row as it does unlined.

The IR of a unit of a lined kernel holds each line statement once per lane: lane ``k`` of line
``i`` is element ``i * n + k``, and GCC, vectorising across units, reads those elements with
strided loads and shuffles (a lined tanh chain ran at two thirds of the unlined one). When the
unit's statements are its lanes' copies of one another, :func:`lanes_as_units` keeps one copy,
the copy of lane 0, reading element ``e`` where lane ``k`` of line ``i`` read ``i * n + k``, and
the row loop counts elements ``e`` instead of units: the loop GCC sees is the unlined one.

That is exact when the lanes cannot tell they now run one after another: every line access is
lane ``k`` of the unit's own line (its index ``u64(i) * n + k`` for the local ``i`` holding the
row's position), each lane's locals are its own, buffers stored lane by lane are touched by no
other access, and the statements before the first line statement are assignments, read no
buffer and are repeated harmlessly (each name assigned once, from names assigned before).
Anything else keeps the unit as the IR has it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cubejit.backends.cstyle_lines import line_widths
from cubejit.ir import nodes as ir
from cubejit.ir.traversal import map_expr, walk_expr
from cubejit.ir.types import ArrayType, u64


@dataclass(frozen=True, slots=True)
class LaneUnits:
    """A unit body run once per lane."""

    width: int
    """The lanes of every line the body touches."""
    element: str
    """The ``u64`` name the body reads the lane's element index from."""
    body: tuple[ir.Stmt, ...]
    """Lane 0's copy of the statements, every line access reading element :attr:`element`."""


class _NotLaneWise(Exception):
    """The unit's lanes do not run the same statements on their own elements."""


def lanes_as_units(
    kernel: ir.KernelIR, body: tuple[ir.Stmt, ...], lead: ir.Position
) -> LaneUnits | None:
    """``body`` (the unit's statements of ``kernel`` whose row counts ``lead``) as one lane's
    statements, or None when that is not exact (see the module's doc)."""
    widths = line_widths(kernel)
    if not widths or len(set(widths.values())) != 1:
        return None
    if any(not isinstance(p.type, ArrayType) for p in kernel.params if p.name in widths):
        return None
    taken = {p.name for p in kernel.params} | {local.name for local in kernel.locals}
    element = "lane_element"
    while element in taken:
        element += "_"
    try:
        lanes = _Lanes(widths, element, body, lead)
        return LaneUnits(lanes.width, element, lanes.one_lane())
    except _NotLaneWise:
        return None


class _Lanes:
    def __init__(
        self, widths: Mapping[str, int], element: str, body: tuple[ir.Stmt, ...], lead: ir.Position
    ) -> None:
        self.widths = widths
        self.width = next(iter(widths.values()))
        self.element = element
        self.body = body
        self.lead = lead
        self.positions: set[str] = set()
        """Locals assigned the row's position before the line statements."""
        self.unit: set[str] = set()
        """Locals of the statements before the first line statement."""
        self.lane: dict[str, tuple[str, int]] = {}
        """A lane's local: lane 0's name for it, and its lane."""
        self.written = {s.array for s in body if isinstance(s, ir.Store)}
        self.assigned = {s.name for s in body if isinstance(s, ir.Assign)}

    def one_lane(self) -> tuple[ir.Stmt, ...]:
        kept: list[ir.Stmt] = []
        position, grouped = 0, False
        while position < len(self.body):
            group = self.body[position : position + self.width]
            lane0 = self.group(group) if len(group) == self.width else None
            if lane0 is not None:
                kept.append(lane0)
                position += self.width
                grouped = True
                continue
            if grouped:
                raise _NotLaneWise
            kept.append(self.before_lines(self.body[position]))
            position += 1
        if not grouped:
            raise _NotLaneWise
        return tuple(kept)

    def constant(self, name: str) -> bool:
        """Whether every lane reads one value of ``name``, whenever it reads it."""
        return name in self.unit or name not in self.assigned

    def before_lines(self, s: ir.Stmt) -> ir.Stmt:
        """A statement before the line statements: an assignment of a fresh name from names
        assigned before it, reading no buffer."""
        if not isinstance(s, ir.Assign) or s.name in self.unit:
            raise _NotLaneWise
        for e in walk_expr(s.value):
            if isinstance(e, ir.Load) or (isinstance(e, ir.Var) and not self.constant(e.name)):
                raise _NotLaneWise
        if isinstance(s.value, ir.PositionOf) and s.value.which is self.lead:
            self.positions.add(s.name)
        self.unit.add(s.name)
        return s

    def group(self, group: tuple[ir.Stmt, ...]) -> ir.Stmt | None:
        """Lane 0's statement of ``group``, when statement ``k`` is lane ``k``'s copy of it."""
        if not all(isinstance(s, ir.Assign | ir.Store) for s in group):
            return None
        saved = dict(self.lane)
        try:
            forms = [self.lane_form(s, k, group[0]) for k, s in enumerate(group)]
        except _NotLaneWise:
            forms = []
        if not forms or any(form != forms[0] for form in forms[1:]):
            self.lane = saved
            return None
        return forms[0]

    def lane_form(self, s: ir.Stmt, k: int, first: ir.Stmt) -> ir.Stmt:
        """Lane ``k``'s statement ``s`` as lane 0 writes it; ``first`` is lane 0's."""
        if isinstance(s, ir.Assign):
            value = self.expr(s.value, k)
            if s.name in self.unit or not isinstance(first, ir.Assign):
                raise _NotLaneWise
            lane0 = self.lane.get(first.name, (first.name, 0))[0]
            known = self.lane.setdefault(s.name, (lane0, k))
            if known != (lane0, k):
                raise _NotLaneWise
            return ir.Assign(lane0, value)
        assert isinstance(s, ir.Store)
        if self.lane_index(s.array, s.index) != k:
            raise _NotLaneWise
        return ir.Store(s.array, ir.Var(self.element, u64), self.expr(s.value, k))

    def lane_index(self, array: str, index: ir.Expr) -> int:
        """``k`` for an index ``u64(i) * n + k`` of lined ``array``, ``i`` the row's position."""
        if not (
            array in self.widths
            and isinstance(index, ir.Binary)
            and index.op is ir.BinaryOp.ADD
            and isinstance(index.rhs, ir.Const)
            and isinstance(index.lhs, ir.Binary)
            and index.lhs.op is ir.BinaryOp.MUL
            and isinstance(index.lhs.rhs, ir.Const)
            and index.lhs.rhs.value == self.width
        ):
            raise _NotLaneWise
        row = index.lhs.lhs
        if isinstance(row, ir.Cast):
            row = row.value
        if not (isinstance(row, ir.Var) and row.name in self.positions):
            raise _NotLaneWise
        return int(index.rhs.value)

    def expr(self, e: ir.Expr, k: int) -> ir.Expr:
        """Lane ``k``'s expression ``e`` as lane 0 writes it."""

        def lane(sub: ir.Expr) -> ir.Expr:
            if isinstance(sub, ir.Load):
                if sub.array not in self.widths:
                    if sub.array in self.written:
                        raise _NotLaneWise
                    return sub
                if self.lane_index(sub.array, sub.index) != k:
                    raise _NotLaneWise
                return ir.Load(sub.array, ir.Var(self.element, u64), sub.type)
            if isinstance(sub, ir.Var) and sub.name != self.element:
                if sub.name in self.lane:
                    lane0, of = self.lane[sub.name]
                    if of != k:
                        raise _NotLaneWise
                    return ir.Var(lane0, sub.type)
                if not self.constant(sub.name):
                    raise _NotLaneWise
            return sub

        return map_expr(e, lane)
