"""Whole-line loads and stores in C-family text: a line's lanes moved as one aligned vector.

The IR reads and writes a ``cj.Line[T]`` buffer lane by lane (lane ``k`` of line ``i`` is
element ``i * n + k``). Within a run of straight-line assignments and stores, the walker finds
every line all of whose lanes are loaded and loads it once, as a struct of ``n`` lanes aligned
to its size (``ld.global.v4.f32`` on CUDA, one vector load in C), just before its first lane is
used; and the ``n`` stores of one line become one store. The launch chose ``n`` so that each
line is aligned to its size, which makes the wide access legal. A line whose lanes would be
read across a store to the same buffer, or across an assignment to a name its index reads
(between its first and its last read in the run: the same index read again after such an
assignment is another element), keeps its lane-by-lane loads. A store whose index is held in a
name (a coarsened CUDA thread holds each store's index and value until its stores come last) is
read through that name's assignment. Where the dialect has a :class:`PairSpelling` (CUDA's
``__half2``), the walker computes two adjacent lanes of such lines in one operation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cubejit.ir import nodes as ir
from cubejit.ir.traversal import walk_expr
from cubejit.ir.types import ArrayType, Scalar, TensorType


def line_widths(kernel: ir.KernelIR) -> dict[str, int]:
    """The lanes per line of each ``cj.Line[T]`` parameter wider than one lane."""
    widths = {}
    for p in kernel.params:
        if isinstance(p.type, ArrayType | TensorType) and (p.type.line or 1) > 1:
            widths[p.name] = p.type.line or 1
    return widths


@dataclass(frozen=True, slots=True)
class PairSpelling:
    """How a dialect computes two adjacent lanes of a half type at once (CUDA's ``__half2``):
    the pair's type, making one of two lanes or of one value, its low and high lane, and the
    operations it has, which round each lane as the scalar operation does."""

    type: str
    make: str
    broadcast: str
    low: str
    high: str
    ops: Mapping[ir.BinaryOp, str]


def struct_name(elem: Scalar, width: int) -> str:
    return f"cj_line{width}_{elem.name}"


@dataclass(frozen=True, slots=True)
class LineAccess:
    """Lane ``lane`` of the line of ``array`` whose lane 0 is at ``first``."""

    array: str
    first: ir.Expr
    lane: int


def lane_access(e: ir.Load | ir.Store, widths: dict[str, int]) -> LineAccess | None:
    """What ``e`` reaches, when it is one lane of a line of a lined buffer."""
    width = widths.get(e.array)
    if width is None:
        return None
    index = e.index
    if isinstance(index, ir.TensorIndex):
        split = _split(index.indices[-1], width)
        if split is None:
            return None
        base, lane = split
        first: ir.Expr = ir.TensorIndex(index.tensor, (*index.indices[:-1], base), index.type)
        return LineAccess(e.array, first, lane)
    split = _split(index, width)
    return None if split is None else LineAccess(e.array, split[0], split[1])


def _split(index: ir.Expr, width: int) -> tuple[ir.Expr, int] | None:
    """``(i * width + 0, k)`` for an index ``i * width + k``."""
    if (
        isinstance(index, ir.Binary)
        and index.op is ir.BinaryOp.ADD
        and isinstance(index.rhs, ir.Const)
        and isinstance(index.lhs, ir.Binary)
        and index.lhs.op is ir.BinaryOp.MUL
        and isinstance(index.lhs.rhs, ir.Const)
        and index.lhs.rhs.value == width
    ):
        lane = int(index.rhs.value)
        return ir.Binary(ir.BinaryOp.ADD, index.lhs, ir.Const(0, index.type), index.type), lane
    return None


def _exprs(s: ir.Stmt) -> list[ir.Expr]:
    if isinstance(s, ir.Assign):
        return [s.value]
    if isinstance(s, ir.Store):
        return [s.index, s.value]
    return []


@dataclass
class LinePlan:
    """For one run of statements: the lines to load whole, before which statement, and the
    statements that start a whole-line store."""

    loads: dict[int, list[tuple[str, ir.Expr]]]
    """Statement position: the ``(array, first)`` lines to load just before it."""
    stores: dict[int, LineAccess]
    """Statement position of a line store's lane 0: the line it stores (its statements are
    the next ``width`` of the run)."""


def plan_run(run: tuple[ir.Stmt, ...], widths: dict[str, int]) -> LinePlan:
    """Which lines of ``run`` (assignments and stores only) move whole."""
    uses: dict[tuple[str, ir.Expr], dict[int, int]] = {}
    last: dict[tuple[str, ir.Expr], int] = {}
    for position, s in enumerate(run):
        for top in _exprs(s):
            for e in walk_expr(top):
                if isinstance(e, ir.Load):
                    access = lane_access(e, widths)
                    if access is not None:
                        lanes = uses.setdefault((access.array, access.first), {})
                        lanes.setdefault(access.lane, position)
                        last[(access.array, access.first)] = position
    loads: dict[int, list[tuple[str, ir.Expr]]] = {}
    for (array, first), lanes in uses.items():
        if sorted(lanes) != list(range(widths[array])):
            continue
        start, end = min(lanes.values()), last[(array, first)]
        if _disturbed(run[start:end], array, first, widths):
            continue
        loads.setdefault(start, []).append((array, first))
    stores: dict[int, LineAccess] = {}
    position = 0
    while position < len(run):
        access = _store_access(run, position, widths)
        if access is not None and access.lane == 0:
            width = widths[access.array]
            if position + width <= len(run) and all(
                _store_access(run, position + k, widths)
                == LineAccess(access.array, access.first, k)
                for k in range(width)
            ):
                stores[position] = access
                position += width
                continue
        position += 1
    return LinePlan(loads, stores)


def _store_access(
    run: tuple[ir.Stmt, ...], position: int, widths: dict[str, int]
) -> LineAccess | None:
    """The lane ``run[position]`` stores, when it is a store to a lined buffer. An index held
    in a name (as a coarsened thread holds each store's index until its stores come last) is
    read through the name's one assignment earlier in the run, when nothing it reads is
    assigned again before the store."""
    s = run[position]
    if not isinstance(s, ir.Store) or s.array not in widths:
        return None
    if isinstance(s.index, ir.Var):
        held = [j for j in range(position) if _assigns(run[j], s.index.name)]
        if len(held) != 1:
            return None
        value = run[held[0]]
        assert isinstance(value, ir.Assign)
        reads = {e.name for e in walk_expr(value.value) if isinstance(e, ir.Var)}
        if any(_assigns(t, name) for t in run[held[0] + 1 : position] for name in reads):
            return None
        return lane_access(ir.Store(s.array, value.value, s.value), widths)
    return lane_access(s, widths)


def _assigns(s: ir.Stmt, name: str) -> bool:
    return isinstance(s, ir.Assign) and s.name == name


def _disturbed(
    between: tuple[ir.Stmt, ...], array: str, first: ir.Expr, widths: dict[str, int]
) -> bool:
    """Whether moving the loads of line ``first`` of ``array`` ahead of ``between`` changes
    what they read: a store to another element of the buffer, or an assignment to a name the
    index reads."""
    names = {e.name for e in walk_expr(first) if isinstance(e, ir.Var)}
    for s in between:
        if isinstance(s, ir.Assign) and s.name in names:
            return True
        if isinstance(s, ir.Store) and s.array == array:
            access = lane_access(s, widths)
            if access is None or access.first != first:
                return True
    return False
