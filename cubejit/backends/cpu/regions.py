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
- So does a ``range`` loop every unit of the cube runs with the same bounds and never leaves
  early, barrier or not, and a cube-uniform ``if`` around one: the loop over units moves inside
  it (exact, since the units of a region may run in any order), so an accumulation such as
  ``acc += x[base + k * CUBE_DIM + UNIT_POS]`` becomes a vector loop over the units.
- A local used in more than one region, in a cube-level condition or bound, or the variable of
  a cube-level loop, lives across a barrier and is kept per unit: an array with one element per
  unit of the cube (a local array so used becomes one array per unit). Every other local is a
  scalar of its region's loop body, as in a kernel without barriers.
- Shared memory is one buffer per cube, on the stack of the thread running it; since only that
  thread touches it, atomics on it are plain reads and writes.
- A cube-uniform local assigned once (or a cube-level loop's variable) is one C scalar for the
  cube rather than one per unit, so indexing by it stays affine.
- A ``return`` ends the unit's region; one before a barrier is cube-uniform (the barrier
  rule), so after the region the whole cube stops. A ``break``/``continue`` of a cube-level
  loop sets a flag that the loop reads after the region.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from cubejit.backends.cstyle import (
    INDENT,
    Dialect,
    Walker,
    buffer_name,
    local_name,
    param_name,
    with_line_structs,
)
from cubejit.backends.cstyle_helpers import helper_definitions
from cubejit.ir import nodes as ir
from cubejit.ir.traits import assignments, block_traits, own_traits
from cubejit.ir.traversal import map_block, map_expr, operands, walk_expr, walk_exprs, walk_stmts
from cubejit.ir.types import Kind
from cubejit.ir.types import bool_ as bool_t
from cubejit.ir.uniformity import Uniform, Uniformity, analyse
from cubejit.ir.values import Value, declared

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


def _interchangeable(s: ir.Stmt, u: Uniformity, values: Mapping[str, Value]) -> bool:
    """Whether ``s`` is a ``range`` loop the cube runs as a cube-level loop of regions though
    it holds no barrier: every unit reaches it and runs the same iterations (its bounds and
    the control reaching it are cube-uniform) and nothing leaves it early."""
    if not isinstance(s, ir.RangeFor) or u.control_at(s) > Uniform.CUBE:
        return False
    if any(u.of(e) > Uniform.CUBE for e in (s.start, s.stop, s.step)):
        return False
    return not block_traits(s.body, values).exits


def _cube_level(s: ir.Stmt, u: Uniformity, values: Mapping[str, Value]) -> bool:
    """Whether the cube runs ``s`` itself, with regions inside: it holds a barrier, is an
    interchangeable loop, or is an ``if`` on a cube-uniform condition around one."""
    if _has_barrier(s) or _interchangeable(s, u, values):
        return True
    if not isinstance(s, ir.If) or u.control_at(s) > Uniform.CUBE or u.of(s.cond) > Uniform.CUBE:
        return False
    return any(_cube_level(inner, u, values) for inner in (*s.then, *s.orelse))


def _split(
    block: tuple[ir.Stmt, ...], u: Uniformity, values: Mapping[str, Value]
) -> list[_Segment]:
    segments: list[_Segment] = []
    current: list[ir.Stmt] = []

    def close() -> None:
        if current:
            segments.append(_Region(tuple(current)))
            current.clear()

    for s in block:
        if isinstance(s, ir.SyncCube):
            close()
        elif _interchangeable(s, u, values):
            assert isinstance(s, ir.RangeFor)
            close()
            segments.append(_CubeLoop(s, _split(s.body, u, values)))
        elif not _cube_level(s, u, values):
            current.append(s)
        elif isinstance(s, ir.If):
            close()
            segments.append(_CubeIf(s.cond, _split(s.then, u, values), _split(s.orelse, u, values)))
        elif isinstance(s, ir.RangeFor | ir.While):
            close()
            segments.append(_CubeLoop(s, _split(s.body, u, values)))
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


def _assigned_once(
    block: tuple[ir.Stmt, ...], values: Mapping[str, Value], segments: list[_Segment]
) -> set[str]:
    """Locals one unit cannot see another unit assign while it runs a region: each is assigned
    by a single statement outside any loop, or is only the variable of a cube-level loop. A
    cube-uniform such local can be one C scalar for the cube (every unit writes the value it
    already holds)."""
    counts = assignments(block, values)
    in_loops: set[str] = set()
    for s in walk_stmts(block):
        if isinstance(s, ir.RangeFor | ir.While):
            in_loops |= block_traits(s.body, values).assigns
    loop_vars: dict[str, int] = {}
    for seg in _walk(segments):
        if isinstance(seg, _CubeLoop) and isinstance(seg.loop, ir.RangeFor):
            loop_vars[seg.loop.var] = loop_vars.get(seg.loop.var, 0) + 1
    once = {name for name, n in counts.items() if n == 1 and name not in in_loops}
    return once | {var for var, n in loop_vars.items() if counts[var] == n}


def _rematerialised(kernel: ir.KernelIR, values: Mapping[str, Value]) -> ir.KernelIR:
    """``kernel`` with every read of a local that is a pure function of positions, parameters
    and constants (assigned once, outside any loop, from an expression reading no buffer)
    replaced by that expression, so each region recomputes it rather than keeping it per unit:
    ``u = UNIT_POS`` then ``x[base + u]`` stays an affine index the compiler vectorises."""
    counts = assignments(kernel.body, values)
    in_loops: set[str] = set()
    for s in walk_stmts(kernel.body):
        if isinstance(s, ir.RangeFor | ir.While):
            in_loops |= block_traits(s.body, values).assigns
    fixed = {p.name for p in kernel.params if counts[p.name] == 0}
    found: dict[str, ir.Expr] = {}
    for s in walk_stmts(kernel.body):
        if not isinstance(s, ir.Assign) or counts[s.name] != 1 or s.name in in_loops:
            continue
        subs = list(walk_expr(s.value))
        if any(isinstance(e, ir.Load | ir.TensorIndex) for e in subs):
            continue
        names = {e.name for e in subs if isinstance(e, ir.Var)}
        if names <= fixed | found.keys():
            found[s.name] = map_expr(s.value, lambda e: _inlined(e, found))
    if not found:
        return kernel
    body = map_block(kernel.body, lambda e: _inlined(e, found))
    return replace(kernel, body=body)


def _inlined(e: ir.Expr, found: Mapping[str, ir.Expr]) -> ir.Expr:
    return found.get(e.name, e) if isinstance(e, ir.Var) else e


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
    kernel = _rematerialised(kernel, values)
    uniformity = analyse(kernel)
    segments = _split(kernel.body, uniformity, values)
    uses: dict[str, int] = {}
    per_unit: set[str] = set()
    for seg in _walk(segments):
        if isinstance(seg, _Region):
            for name in _names(seg.stmts, values):
                uses[name] = uses.get(name, 0) + 1
        else:
            for e in _cube_exprs(seg):
                per_unit |= {sub.name for sub in walk_expr(e) if isinstance(sub, ir.Var)}
            if isinstance(seg, _CubeLoop) and isinstance(seg.loop, ir.RangeFor):
                per_unit.add(seg.loop.var)
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
    locals_ = {local.name for local in kernel.locals}
    once = _assigned_once(kernel.body, values, segments)
    cube_scalars = {
        name for name in per_unit & locals_ & once if uniformity.names[name] <= Uniform.CUBE
    }
    emitter = _Emitter(
        kernel, segments, per_unit - cube_scalars, cube_scalars, unit, cube, contiguous
    )
    return emitter.emit()


class _Emitter:
    def __init__(
        self,
        kernel: ir.KernelIR,
        segments: list[_Segment],
        per_unit: set[str],
        cube_scalars: set[str],
        unit: Dialect,
        cube: Dialect,
        contiguous: frozenset[str],
    ) -> None:
        self.kernel = kernel
        self.segments = segments
        self.per_unit = per_unit
        self.cube_scalars = cube_scalars
        """Locals shared by regions that hold one value for the whole cube: one C scalar."""
        self.locals = {local.name: local.type for local in kernel.locals}
        self.buffers = {b.name: b for b in kernel.allocations}
        self.params = {p.name: p.type for p in kernel.params}
        unit_spell = {name: f"{self.stored(name)}[cj_u]" for name in per_unit}
        cube_spell = {name: f"{self.stored(name)}[0]" for name in per_unit}
        self.unit = Walker(kernel, unit, contiguous, unit_spell)
        self.cube = Walker(kernel, cube, contiguous, cube_spell, inline_positions=True)
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
        for name in sorted(self.cube_scalars):
            t = self.locals[name]
            head.append(f"{d.type_name(t)} {local_name(name)} = {'false' if t == bool_t else '0'};")
        if self.returns:
            head.append("bool cj_returned = false;")
        self.lines = head
        self.block(self.segments, 0, None)
        if self.returns:
            self.lines.append("cj_cube_end: ;")
        helpers = helper_definitions(
            sorted(self.unit.helpers | self.cube.helpers, key=lambda h: (h[0], h[1].name)), d
        )
        return with_line_structs(self.unit.structs | self.cube.structs, helpers, d), self.lines

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
        if s.var in self.cube_scalars:
            self.line(depth + 2, f"{var} = {counter};")
        else:
            self.line(
                depth + 2,
                f"for (uint32_t cj_u = 0; cj_u < CJ_UNITS; ++cj_u) {var}[cj_u] = {counter};",
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
        for name in sorted(names - self.per_unit - self.cube_scalars):
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
