"""A cube that cooperates, in C: its body as regions split at each ``sync_cube``.

A cube runs on one OS thread (DESIGN.md, "Backends declare what they can do"). A kernel with a
barrier or shared memory runs each cube as a sequence of *regions*: the statements between two
barriers, run as one loop over the cube's units (z, y, x), each unit to the region's end before
the next starts. Finishing a region's loop is the barrier: every unit has then made the writes
it made before ``sync_cube()``. A region stays straight-line code in a counted loop, so the C
compiler still vectorises it.

- A barrier inside an ``if`` or a loop splits that statement too: the ``if`` or loop runs once
  for the cube (its condition and bounds are cube-uniform, which the barrier rule guarantees),
  read from unit 0's values, with regions inside it.
- A local used in more than one region, in a cube-level condition or bound, or the variable of
  a cube-level loop, lives across a barrier and is kept per unit: an array with one element per
  unit of the cube (a local array so used becomes one array per unit). Every other local is a
  scalar of its region's loop body, as in a kernel without barriers.
- Shared memory is one buffer per cube, on the stack of the thread running it.
- A ``return`` ends the unit's region; one before a barrier is cube-uniform (the barrier
  rule), so after the region the whole cube stops. A ``break``/``continue`` of a cube-level
  loop sets a flag that the loop reads after the region.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from cubejit.backends.cstyle import INDENT, Dialect, Walker, buffer_name, local_name, param_name
from cubejit.backends.cstyle_helpers import helper_definitions
from cubejit.ir import nodes as ir
from cubejit.ir.traits import own_traits
from cubejit.ir.traversal import operands, walk_expr, walk_exprs, walk_stmts
from cubejit.ir.types import Kind
from cubejit.ir.types import bool_ as bool_t
from cubejit.ir.values import declared

_FLAT_UNIT = "cj_unit_x + CJ_DIM_X * (cj_unit_y + CJ_DIM_Y * cj_unit_z)"


def needs_regions(kernel: ir.KernelIR) -> bool:
    """Whether ``kernel`` runs as regions: it waits at a barrier or holds shared memory."""
    shared = any(b.kind is ir.BufferKind.SHARED for b in kernel.allocations)
    return shared or kernel.has(ir.SyncCube)


@dataclass(eq=False)
class _Region:
    stmts: tuple[ir.Stmt, ...]


@dataclass(eq=False)
class _CubeIf:
    cond: ir.Expr
    then: list[_Segment]
    orelse: list[_Segment]


@dataclass(eq=False)
class _CubeLoop:
    loop: ir.RangeFor | ir.While
    body: list[_Segment]


_Segment = _Region | _CubeIf | _CubeLoop


def _has_barrier(s: ir.Stmt) -> bool:
    return any(isinstance(inner, ir.SyncCube) for inner in walk_stmts((s,)))


def _split(block: tuple[ir.Stmt, ...]) -> list[_Segment]:
    segments: list[_Segment] = []
    current: list[ir.Stmt] = []

    def close() -> None:
        if current:
            segments.append(_Region(tuple(current)))
            current.clear()

    for s in block:
        if isinstance(s, ir.SyncCube):
            close()
        elif not _has_barrier(s):
            current.append(s)
        elif isinstance(s, ir.If):
            close()
            segments.append(_CubeIf(s.cond, _split(s.then), _split(s.orelse)))
        elif isinstance(s, ir.RangeFor | ir.While):
            close()
            segments.append(_CubeLoop(s, _split(s.body)))
        else:
            raise AssertionError(f"a barrier inside {type(s).__name__}")
    close()
    return segments


def _walk(segments: list[_Segment]) -> Iterator[_Segment]:
    for seg in segments:
        yield seg
        if isinstance(seg, _CubeIf):
            yield from _walk(seg.then)
            yield from _walk(seg.orelse)
        elif isinstance(seg, _CubeLoop):
            yield from _walk(seg.body)


def _names(stmts: tuple[ir.Stmt, ...], values: dict) -> set[str]:
    """Every local, scalar parameter and local array ``stmts`` read or write."""
    found: set[str] = set()
    for s in walk_stmts(stmts):
        found |= own_traits(s, values).assigns
        if isinstance(s, ir.Store | ir.Atomic):
            found.add(s.array)
    for e in walk_exprs(stmts):
        if isinstance(e, ir.Var):
            found.add(e.name)
        elif isinstance(e, ir.Load):
            found.add(e.array)
    return found


def _cube_exprs(seg: _CubeIf | _CubeLoop) -> tuple[ir.Expr, ...]:
    if isinstance(seg, _CubeIf):
        return (seg.cond,)
    return operands(seg.loop)


def cube_body(
    kernel: ir.KernelIR, unit: Dialect, cube: Dialect, contiguous: frozenset[str] = frozenset()
) -> tuple[str, list[str]]:
    """The helpers ``kernel``'s regions call and the lines of one cube's run, inside the loop
    over cubes (which declares ``cj_cube_*``). ``unit`` spells a region's code, ``cube`` the
    cube-level conditions and bounds (its unit positions are 0); the tensors in ``contiguous``
    have stride 1 along their last dimension."""
    values = dict(declared(kernel))
    segments = _split(kernel.body)
    uses: dict[str, int] = {}
    per_unit: set[str] = set()
    for seg in _walk(segments):
        if isinstance(seg, _Region):
            for name in _names(seg.stmts, values):
                uses[name] = uses.get(name, 0) + 1
        else:
            for e in _cube_exprs(seg):
                per_unit |= {sub.name for sub in walk_expr(e) if isinstance(sub, ir.Var)}
            if isinstance(seg.loop if isinstance(seg, _CubeLoop) else None, ir.RangeFor):
                per_unit.add(seg.loop.var)  # type: ignore[union-attr]
    params = {p.name for p in kernel.params}
    assigned_params = {
        name
        for s in walk_stmts(kernel.body)
        for name in own_traits(s, values).assigns
        if name in params
    }
    shared = {b.name for b in kernel.allocations if b.kind is ir.BufferKind.SHARED}
    per_unit |= {name for name, n in uses.items() if n > 1} | assigned_params
    per_unit -= shared | (params - assigned_params)
    return _Emitter(kernel, segments, per_unit, unit, cube, contiguous).emit()


class _Emitter:
    def __init__(
        self,
        kernel: ir.KernelIR,
        segments: list[_Segment],
        per_unit: set[str],
        unit: Dialect,
        cube: Dialect,
        contiguous: frozenset[str],
    ) -> None:
        self.kernel = kernel
        self.segments = segments
        self.per_unit = per_unit
        self.locals = {local.name: local.type for local in kernel.locals}
        self.buffers = {b.name: b for b in kernel.allocations}
        self.params = {p.name: p.type for p in kernel.params}
        unit_spell = {name: f"{self.stored(name)}[cj_u]" for name in per_unit}
        cube_spell = {name: f"{self.stored(name)}[0]" for name in per_unit}
        self.unit = Walker(kernel, unit, contiguous, unit_spell)
        self.cube = Walker(kernel, cube, contiguous, cube_spell)
        self.lines: list[str] = []
        self.regions = 0
        self.loops = 0
        self.returns = kernel.has(ir.Return)

    def stored(self, name: str) -> str:
        """The C name of the per-unit array holding ``name``."""
        if name in self.buffers:
            return buffer_name(self.buffers[name])
        if name in self.params:
            return f"cj_unit_{param_name(name)}"
        return local_name(name)

    def emit(self) -> tuple[str, list[str]]:
        d = self.unit.d
        head = []
        for b in self.kernel.allocations:
            if b.kind is ir.BufferKind.SHARED:
                head.append(
                    f"{d.type_name(b.elem)} {buffer_name(b)}[{b.size}] "
                    f"__attribute__((aligned(64)));"
                )
        for name in sorted(self.per_unit):
            if name in self.buffers:
                b = self.buffers[name]
                head.append(f"{d.type_name(b.elem)} {buffer_name(b)}[CJ_UNITS][{b.size}];")
                continue
            t = self.locals.get(name) or self.params[name]
            head.append(f"{d.type_name(t)} {self.stored(name)}[CJ_UNITS];")  # type: ignore[arg-type]
            if name in self.params:
                head.append(
                    f"for (uint32_t cj_u = 0; cj_u < CJ_UNITS; ++cj_u) "
                    f"{self.stored(name)}[cj_u] = {param_name(name)};"
                )
        if self.returns:
            head.append("bool cj_returned = false;")
        self.lines = head
        self.block(self.segments, 0, None)
        if self.returns:
            self.lines.append("cj_cube_end: ;")
        helpers = helper_definitions(
            sorted(self.unit.helpers | self.cube.helpers, key=lambda h: (h[0], h[1].name)), d
        )
        return helpers, self.lines

    def line(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    def block(self, segments: list[_Segment], depth: int, loop: int | None) -> None:
        for seg in segments:
            if isinstance(seg, _Region):
                self.region(seg, depth, loop)
            elif isinstance(seg, _CubeIf):
                self.line(depth, f"if ({self.cube.expr(seg.cond)}) {{")
                self.block(seg.then, depth + 1, loop)
                if seg.orelse:
                    self.line(depth, "} else {")
                    self.block(seg.orelse, depth + 1, loop)
                self.line(depth, "}")
            else:
                self.cube_loop(seg, depth)

    def cube_loop(self, seg: _CubeLoop, depth: int) -> None:
        n = self.loops
        self.loops += 1
        s = seg.loop
        if isinstance(s, ir.While):
            self.line(depth, f"while ({self.cube.expr(s.cond)}) {{")
            self.loop_body(seg, depth + 1, n)
            self.line(depth, "}")
            return
        t = s.start.type
        name = self.unit.d.type_name(t)
        counter, stop, step = f"cj_ci{n}", f"cj_cstop{n}", f"cj_cstep{n}"
        self.line(depth, "{")
        self.line(depth + 1, f"const {name} {stop} = {self.cube.expr(s.stop)};")
        self.line(depth + 1, f"const {name} {step} = {self.cube.expr(s.step)};")
        if isinstance(s.step, ir.Const):
            cond = f"({counter} {'<' if s.step.value > 0 else '>'} {stop})"
        elif t.kind is Kind.UINT:
            cond = f"({counter} < {stop})"
        else:
            cond = f"(({step} > 0) ? ({counter} < {stop}) : ({counter} > {stop}))"
        start = self.cube.expr(s.start)
        self.line(depth + 1, f"for ({name} {counter} = {start}; {cond}; {counter} += {step}) {{")
        var = self.stored(s.var)
        self.line(
            depth + 2, f"for (uint32_t cj_u = 0; cj_u < CJ_UNITS; ++cj_u) {var}[cj_u] = {counter};"
        )
        self.loop_body(seg, depth + 2, n)
        self.line(depth + 1, "}")
        self.line(depth, "}")

    def loop_body(self, seg: _CubeLoop, depth: int, n: int) -> None:
        """The segments of cube-level loop ``n``, after the flags its regions set."""
        start = len(self.lines)
        self.block(seg.body, depth, n)
        flags = [
            f"{INDENT * depth}bool cj_{flag}{n} = false;"
            for flag in ("break", "continue")
            if any(f"cj_{flag}{n} = true" in text for text in self.lines[start:])
        ]
        self.lines[start:start] = flags

    def region(self, seg: _Region, depth: int, loop: int | None) -> None:
        r = self.regions
        self.regions += 1
        jumps: set[str] = set()

        def exits(s: ir.Break | ir.Continue | ir.Return) -> str:
            jumps.add(type(s).__name__)
            if isinstance(s, ir.Return):
                return f"{{ cj_returned = true; goto cj_next{r}; }}"
            flag = "break" if isinstance(s, ir.Break) else "continue"
            return f"{{ cj_{flag}{loop} = true; goto cj_next{r}; }}"

        self.unit.exits = exits
        self.unit.lines = []
        self.unit.block(seg.stmts, 0)
        body = self.unit.lines
        d = self.unit.d
        used = {e.which for e in walk_exprs(seg.stmts) if isinstance(e, ir.PositionOf)}
        inner = [
            f"const uint32_t pos_{p.name.lower()} = {d.position(p)};"
            for p in ir.Position
            if p in used
        ]
        names = _names(seg.stmts, dict(declared(self.kernel)))
        if names & self.per_unit:
            inner.insert(
                0,
                "const uint32_t cj_u = cj_unit_x + CJ_DIM_X * (cj_unit_y + CJ_DIM_Y * cj_unit_z);",
            )
        for name in sorted(names - self.per_unit):
            if name in self.locals:
                t = self.locals[name]
                zero = "false" if t == bool_t else "0"
                inner.append(f"{d.type_name(t)} {local_name(name)} = {zero};")
            elif name in self.buffers and self.buffers[name].kind is ir.BufferKind.LOCAL:
                b = self.buffers[name]
                inner.append(f"{d.type_name(b.elem)} {buffer_name(b)}[{b.size}];")
        inner += body
        if jumps:
            inner.append(f"cj_next{r}: ;")
        self.line(depth, "for (uint32_t cj_unit_z = 0; cj_unit_z < CJ_DIM_Z; ++cj_unit_z) {")
        self.line(depth + 1, "for (uint32_t cj_unit_y = 0; cj_unit_y < CJ_DIM_Y; ++cj_unit_y) {")
        self.line(depth + 2, "for (uint32_t cj_unit_x = 0; cj_unit_x < CJ_DIM_X; ++cj_unit_x) {")
        for text in inner:
            self.line(depth + 3, text)
        self.line(depth + 2, "}")
        self.line(depth + 1, "}")
        self.line(depth, "}")
        if "Return" in jumps:
            self.line(depth, "if (cj_returned) goto cj_cube_end;")
        if "Break" in jumps:
            self.line(depth, f"if (cj_break{loop}) break;")
        if "Continue" in jumps:
            self.line(depth, f"if (cj_continue{loop}) continue;")
