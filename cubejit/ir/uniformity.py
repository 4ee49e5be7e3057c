"""Which values are the same for every unit of a launch, of a cube or of a plane.

A barrier or a plane operation is correct only where every unit of its group reaches it, so
the validator (LANGUAGE.md's barrier rule) asks how uniform the control flow around it is;
passes ask how uniform a value is before they compute it once for many units (the CPU's
hoisted bounds guard needs one bound for the whole launch).

Levels are ordered: a value the same for the whole launch is also the same within a cube and
within a plane. Parameters, constants, lengths, ``CUBE_DIM``, ``CUBE_COUNT`` and ``PLANE_DIM``
are :attr:`Uniform.LAUNCH`; ``CUBE_POS*`` is :attr:`Uniform.CUBE`; ``UNIT_POS*``,
``ABSOLUTE_POS*`` and ``UNIT_POS_PLANE`` are :attr:`Uniform.UNIT`. An atomic's result is
:attr:`Uniform.UNIT`; a plane reduction's, broadcast's or ballot's :attr:`Uniform.PLANE`, any
other plane operation's :attr:`Uniform.UNIT`. An operation is as uniform as its least uniform
operand, except that ``UNIT_POS // PLANE_DIM`` and ``UNIT_POS < m`` (or ``>=``) with ``m`` a
multiple of ``PLANE_DIM`` are :attr:`Uniform.PLANE`: planes are consecutive runs of units. A
load is as uniform as its index when no statement of the kernel writes the buffer (every unit
reads the same memory), else :attr:`Uniform.UNIT`; with ``promise_loads`` every load counts as
:attr:`Uniform.LAUNCH` (the barrier rule takes data-dependent conditions as the author's
promise). A name is as uniform as the least uniform value assigned to it, and as the control
flow at each assignment: under an ``if`` on a unit-varying condition, after a unit-varying
``return``, or in a loop whose trip count varies, a name differs between units.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import assert_never

from cubejit.ir import nodes as ir
from cubejit.ir.traits import block_traits
from cubejit.ir.traversal import operands
from cubejit.ir.values import declared


class Uniform(enum.IntEnum):
    """How widely a value is shared; a larger value is shared by fewer units."""

    LAUNCH = 0
    """The same for every unit of the launch."""
    CUBE = 1
    """The same for every unit of one cube."""
    PLANE = 2
    """The same for every unit of one plane."""
    UNIT = 3
    """May differ from one unit to the next."""


_POSITIONS = {
    ir.PositionKind.ABSOLUTE_POS: Uniform.UNIT,
    ir.PositionKind.UNIT_POS: Uniform.UNIT,
    ir.PositionKind.CUBE_POS: Uniform.CUBE,
    ir.PositionKind.CUBE_DIM: Uniform.LAUNCH,
    ir.PositionKind.CUBE_COUNT: Uniform.LAUNCH,
    ir.PositionKind.PLANE_DIM: Uniform.LAUNCH,
    ir.PositionKind.UNIT_POS_PLANE: Uniform.UNIT,
}


@dataclass
class Uniformity:
    """The analysis of one kernel: ask :meth:`of` for an expression, :meth:`control_at` for
    the control flow reaching a statement."""

    names: dict[str, Uniform]
    """Every scalar parameter and local, by name."""
    written: frozenset[str]
    """Buffers some statement of the kernel writes."""
    promise_loads: bool = False
    control: dict[int, Uniform] = field(default_factory=dict)
    """By ``id`` of each statement of the kernel: how uniform reaching it is."""

    def of(self, e: ir.Expr) -> Uniform:
        """How uniform the value of ``e`` is (where it is evaluated)."""
        if isinstance(e, ir.Const | ir.Length | ir.Shape | ir.Stride):
            return Uniform.LAUNCH
        if isinstance(e, ir.Var):
            return self.names.get(e.name, Uniform.UNIT)
        if isinstance(e, ir.PositionOf):
            return _POSITIONS[e.which.kind]
        if isinstance(e, ir.Load):
            if self.promise_loads:
                return Uniform.LAUNCH
            return Uniform.UNIT if e.array in self.written else self.of(e.index)
        if isinstance(e, ir.Binary) and _splits_at_planes(e):
            return max(Uniform.PLANE, self.of(e.rhs))
        if isinstance(
            e, ir.TensorIndex | ir.Unary | ir.Binary | ir.Cast | ir.Bitcast | ir.Math | ir.Select
        ):
            return max((self.of(sub) for sub in operands(e)), default=Uniform.LAUNCH)
        assert_never(e)

    def control_at(self, s: ir.Stmt) -> Uniform:
        """How uniform the control flow reaching ``s`` is: :attr:`Uniform.CUBE` means that
        either every unit of a cube reaches it or none does. ``s`` must be a statement object
        of the analysed kernel."""
        return self.control[id(s)]


def _splits_at_planes(e: ir.Binary) -> bool:
    """Whether ``e`` is ``UNIT_POS // PLANE_DIM``, or ``UNIT_POS < m`` or ``UNIT_POS >= m``
    with ``m`` a multiple of ``PLANE_DIM``: the same for every lane of a plane, since planes
    are consecutive runs of ``PLANE_DIM`` units."""
    if e.lhs != ir.PositionOf(ir.Position.UNIT_POS):
        return False
    if e.op is ir.BinaryOp.FLOORDIV:
        return e.rhs == _PLANE_DIM
    if e.op not in (ir.BinaryOp.LT, ir.BinaryOp.GE):
        return False
    m = e.rhs
    if m == _PLANE_DIM:
        return True
    return isinstance(m, ir.Binary) and m.op is ir.BinaryOp.MUL and _PLANE_DIM in (m.lhs, m.rhs)


_PLANE_DIM = ir.PositionOf(ir.Position.PLANE_DIM)


def analyse(kernel: ir.KernelIR, *, promise_loads: bool = False) -> Uniformity:
    """The uniformity of every name and statement of ``kernel``."""
    values = declared(kernel)
    written = frozenset(a.buffer for a in block_traits(kernel.body, values).writes)
    names = {name: Uniform.LAUNCH for name, value in values.items() if not value.kind.is_buffer}
    u = Uniformity(names, written, promise_loads)
    while True:
        before = dict(u.names)
        _Analysis(u).block(kernel.body, Uniform.LAUNCH)
        if u.names == before:
            return u


class _Analysis:
    """One pass over the kernel; :func:`analyse` runs passes until no name changes level
    (levels only rise, so it ends)."""

    def __init__(self, u: Uniformity) -> None:
        self.u = u
        self.leaving = Uniform.LAUNCH
        """How uniform the ``break``/``continue`` of the innermost loop body so far are."""
        self.returning = Uniform.LAUNCH
        """How uniform the ``return`` statements so far are."""

    def assign(self, name: str, level: Uniform) -> None:
        self.u.names[name] = max(self.u.names.get(name, Uniform.LAUNCH), level)

    def block(self, stmts: tuple[ir.Stmt, ...], control: Uniform) -> None:
        """Walks ``stmts`` entered with ``control``; a statement after a divergent exit runs
        under that exit's level."""
        for s in stmts:
            control = max(control, self.leaving, self.returning)
            self.u.control[id(s)] = control
            self.stmt(s, control)

    def stmt(self, s: ir.Stmt, control: Uniform) -> None:
        if isinstance(s, ir.Assign):
            self.assign(s.name, max(control, self.u.of(s.value)))
        elif isinstance(s, ir.Store):
            pass
        elif isinstance(s, ir.If):
            inner = max(control, self.u.of(s.cond))
            self.block(s.then, inner)
            self.block(s.orelse, inner)
        elif isinstance(s, ir.RangeFor):
            bounds = max(self.u.of(e) for e in (s.start, s.stop, s.step))
            self.loop(s.body, max(control, bounds), s.var)
        elif isinstance(s, ir.While):
            self.loop(s.body, max(control, self.u.of(s.cond)), None)
        elif isinstance(s, ir.Break | ir.Continue):
            self.leaving = max(self.leaving, control)
        elif isinstance(s, ir.Return):
            self.returning = max(self.returning, control)
        elif isinstance(s, ir.Atomic):
            if s.result is not None:
                self.assign(s.result, Uniform.UNIT)
        elif isinstance(s, ir.SyncCube | ir.SyncPlane | ir.Print | ir.BoundsFailure):
            pass
        elif isinstance(s, ir.PlaneOp):
            level = Uniform.PLANE if s.fn.is_plane_uniform else Uniform.UNIT
            self.assign(s.result, max(control, level))
        else:
            assert_never(s)

    def loop(self, body: tuple[ir.Stmt, ...], control: Uniform, var: str | None) -> None:
        outer = self.leaving
        self.leaving = Uniform.LAUNCH
        while True:
            entry = max(control, self.leaving)
            if var is not None:
                self.assign(var, entry)
            before = (self.leaving, self.returning)
            self.block(body, entry)
            if (self.leaving, self.returning) == before:
                break
        self.leaving = outer
