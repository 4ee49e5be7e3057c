"""What a statement does, as data: the one question every transforming pass asks before it moves,
merges or drops code.

Expressions are pure; their only contact with memory is reading buffers. Statements carry every
effect: a store writes a buffer, an assignment writes a unit's own name, ``break``/``continue``/
``return`` leave, and (in later statement kinds) a barrier synchronises and a plane operation
needs its plane converged; a print (and a checked variant's bounds failure) writes output seen
outside the kernel's buffers. :func:`traits` answers for one statement, nested blocks included;
a pass that reorders (CUDA's loads before stores), duplicates (coarsening) or skips code (the
hoisted bounds guard) checks the answer and refuses or adapts, rather than relying on a promise
that nothing has an effect. The dispatch over node kinds here ends in ``assert_never``: a new
kind gets its traits declared or the type check fails.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import assert_never

from cubejit.ir import nodes as ir
from cubejit.ir.traversal import operands, walk_stmts
from cubejit.ir.values import MemorySpace, Value


class Group(enum.IntEnum):
    """A set of units that act together; a wider group has a larger value."""

    PLANE = 1
    """The units of one plane (a CUDA warp)."""
    CUBE = 2
    """The units of one cube."""


class Exit(enum.Enum):
    """A way a statement leaves the straight line."""

    BREAK = "break"
    CONTINUE = "continue"
    RETURN = "return"


@dataclass(frozen=True, slots=True)
class Access:
    """One buffer read or written, and where it lives."""

    buffer: str
    space: MemorySpace


@dataclass(frozen=True, slots=True)
class Traits:
    """What a statement does. The empty value (the default) is a statement with no effect."""

    reads: frozenset[Access] = frozenset()
    """Buffers it may read an element of."""
    writes: frozenset[Access] = frozenset()
    """Buffers it may write an element of."""
    assigns: frozenset[str] = frozenset()
    """Scalars (locals and scalar parameters, each unit's own) it may assign."""
    synchronises: Group | None = None
    """The widest group of units it waits for (a barrier); None when it waits for none."""
    converged: Group | None = None
    """The widest group whose units must all reach it together (a barrier, a plane
    operation); None when it may run in any subset of units."""
    exits: frozenset[Exit] = frozenset()
    """Where it may leave: out of the innermost enclosing loop, or out of the unit."""
    outputs: bool = False
    """Whether it writes what is seen outside the kernel's buffers: a line of the process's
    output, the launch's bounds-check record. A pass never duplicates, reorders or drops
    such a statement, so running it is never local."""

    @property
    def is_local(self) -> bool:
        """Whether running it (or not) is observable only through the unit's own scalars:
        it writes no buffer, waits for and needs no other unit, and never leaves."""
        return (
            not self.writes
            and self.synchronises is None
            and self.converged is None
            and not self.exits
            and not self.outputs
        )

    def spaces(self) -> frozenset[MemorySpace]:
        """Every memory space it reads or writes."""
        return frozenset(a.space for a in self.reads | self.writes)

    def join(self, other: Traits) -> Traits:
        """What running both does."""
        return Traits(
            self.reads | other.reads,
            self.writes | other.writes,
            self.assigns | other.assigns,
            _widest(self.synchronises, other.synchronises),
            _widest(self.converged, other.converged),
            self.exits | other.exits,
            self.outputs or other.outputs,
        )


def _widest(a: Group | None, b: Group | None) -> Group | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _access(values: Mapping[str, Value], name: str) -> Access:
    value = values[name]
    if value.space is None:
        raise ValueError(f"{name} is a {value.kind.value}, not a buffer")
    return Access(name, value.space)


def expr_reads(e: ir.Expr, values: Mapping[str, Value]) -> frozenset[Access]:
    """The buffers ``e`` reads, its operands included."""
    return frozenset(_access(values, name) for name in _buffers_read(e))


def _buffers_read(e: ir.Expr) -> list[str]:
    names: list[str] = []
    stack = [e]
    while stack:
        top = stack.pop()
        name = _buffer_read(top)
        if name is not None:
            names.append(name)
        stack.extend(operands(top))
    return names


def reads_memory(e: ir.Expr) -> bool:
    """Whether evaluating ``e`` reads a buffer element, so that its value may change when
    statements run between two evaluations (the frontend asks before it reuses a value)."""
    return bool(_buffers_read(e))


def _buffer_read(e: ir.Expr) -> str | None:
    """The buffer ``e`` itself (not its operands) reads an element of, if any."""
    if isinstance(e, ir.Load):
        return e.array
    if isinstance(e, ir.Const | ir.Var | ir.PositionOf | ir.Length | ir.Shape | ir.Stride):
        return None
    if isinstance(e, ir.TensorIndex):
        return None
    if isinstance(e, ir.Unary | ir.Binary | ir.Cast | ir.Bitcast | ir.Math | ir.Select):
        return None
    assert_never(e)


def own_traits(s: ir.Stmt, values: Mapping[str, Value]) -> Traits:
    """What ``s`` itself does: its own effect and the expressions it evaluates, without the
    statements of its nested blocks."""
    reads = frozenset(_access(values, name) for e in operands(s) for name in _buffers_read(e))
    effect = _effect(s, values)
    return replace(effect, reads=reads | effect.reads)


def _effect(s: ir.Stmt, values: Mapping[str, Value]) -> Traits:
    """What ``s`` itself does besides evaluating its expressions (its ``reads`` are only what
    the effect itself reads: an atomic's element)."""
    if isinstance(s, ir.Assign):
        return Traits(assigns=frozenset((s.name,)))
    if isinstance(s, ir.Store):
        return Traits(writes=frozenset((_access(values, s.array),)))
    if isinstance(s, ir.If | ir.While):
        return _NOTHING
    if isinstance(s, ir.RangeFor):
        return Traits(assigns=frozenset((s.var,)))
    if isinstance(s, ir.Break):
        return Traits(exits=frozenset((Exit.BREAK,)))
    if isinstance(s, ir.Continue):
        return Traits(exits=frozenset((Exit.CONTINUE,)))
    if isinstance(s, ir.Return):
        return Traits(exits=frozenset((Exit.RETURN,)))
    if isinstance(s, ir.Atomic):
        element = frozenset((_access(values, s.array),))
        written = frozenset() if s.op is ir.AtomicOp.LOAD else element
        assigned = frozenset() if s.result is None else frozenset((s.result,))
        return Traits(element, written, assigned)
    if isinstance(s, ir.SyncCube):
        return Traits(synchronises=Group.CUBE, converged=Group.CUBE)
    if isinstance(s, ir.SyncPlane):
        return Traits(synchronises=Group.PLANE, converged=Group.PLANE)
    if isinstance(s, ir.PlaneOp):
        return Traits(assigns=frozenset((s.result,)), converged=Group.PLANE)
    if isinstance(s, ir.Print | ir.BoundsFailure):
        return _OUTPUT
    assert_never(s)


_NOTHING = Traits()
_OUTPUT = Traits(outputs=True)
_LOOP_EXITS = frozenset((Exit.BREAK, Exit.CONTINUE))


def traits(s: ir.Stmt, values: Mapping[str, Value]) -> Traits:
    """What running ``s`` may do, the statements of its nested blocks included. A loop keeps
    the ``break`` and ``continue`` of its own body: they do not leave the loop statement."""
    result = own_traits(s, values)
    if isinstance(s, ir.If):
        for inner in (s.then, s.orelse):
            result = result.join(block_traits(inner, values))
    elif isinstance(s, ir.RangeFor | ir.While):
        body = block_traits(s.body, values)
        result = result.join(replace(body, exits=body.exits - _LOOP_EXITS))
    elif not isinstance(
        s,
        ir.Assign
        | ir.Store
        | ir.Break
        | ir.Continue
        | ir.Return
        | ir.Atomic
        | ir.SyncCube
        | ir.SyncPlane
        | ir.PlaneOp
        | ir.Print
        | ir.BoundsFailure,
    ):
        assert_never(s)
    return result


def block_traits(block: Iterable[ir.Stmt], values: Mapping[str, Value]) -> Traits:
    """What running the statements of ``block`` may do."""
    result = Traits()
    for s in block:
        result = result.join(traits(s, values))
    return result


def assignments(block: tuple[ir.Stmt, ...], values: Mapping[str, Value]) -> Counter[str]:
    """How many statements of ``block`` (nested ones included) assign each name."""
    counts: Counter[str] = Counter()
    for s in walk_stmts(block):
        counts.update(_effect(s, values).assigns)
    return counts
