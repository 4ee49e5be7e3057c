"""One walker from the IR to C-family text, shared by the C and CUDA backends.

The walker owns control flow and the language's semantics (floor ``//`` and ``%``, wrapping
unsigned arithmetic, ``range`` evaluating its stop and step once, lazy ``Select`` and
short-circuit ``and``/``or``); a :class:`Dialect` owns spellings: type names, how a position is
read, math function names, literals and the qualifier of helper functions. A backend gets the
kernel *body* from :func:`emit_body` and writes its own wrapper around it (the C backend a unit
function and a launch entry, the CUDA backend a ``__global__`` function).

Names in the text are decorated so that no IR name can clash with the target language:
:func:`param_name` (``p_x``), :func:`length_name` (``n_x``), :func:`local_name` (``v_i``), a
tensor's :func:`shape_name` (``s_x_0``) and :func:`stride_name` (``d_x_0``);
positions read as :func:`position_name` (``pos_absolute_pos``). Everything the walker invents
itself starts with ``cj_``. Expressions are fully parenthesised. The text depends on the IR
alone, never on the kernel's name, so two kernels that lower to the same IR share one artifact.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import assert_never

from cubejit.backends.cstyle_helpers import helper_definitions
from cubejit.backends.cstyle_lines import lane_access, line_widths, plan_run, struct_name
from cubejit.backends.cstyle_ops import ARITH, COMPARE, FLOAT_MATH, WRAPPING
from cubejit.backends.inspection import c_string, literal_text, print_format, widened
from cubejit.errors import UnsupportedError
from cubejit.ir import nodes as ir
from cubejit.ir.traversal import walk_exprs
from cubejit.ir.types import (
    ArrayType,
    Kind,
    Scalar,
    TensorType,
    f32,
    f64,
    i64,
    round_float,
    u32,
    u64,
)
from cubejit.ir.types import bool_ as bool_t
from cubejit.ir.values import Item

INDENT = "    "


def param_name(name: str) -> str:
    """The C name of parameter ``name`` (an array's pointer, or a scalar's value)."""
    return f"p_{name}"


def length_name(name: str) -> str:
    """The C name of the length (``u32``) of array parameter ``name``."""
    return f"n_{name}"


def shape_name(name: str, dim: int) -> str:
    """The C name of the extent (``u32``) of tensor parameter ``name`` along ``dim``."""
    return f"s_{name}_{dim}"


def stride_name(name: str, dim: int) -> str:
    """The C name of the stride (``u32``, elements) of tensor parameter ``name`` along ``dim``."""
    return f"d_{name}_{dim}"


def local_name(name: str) -> str:
    """The C name of local ``name``."""
    return f"v_{name}"


def buffer_name(buffer: ir.Buffer) -> str:
    """The C name of a buffer the kernel declares: ``s_x`` for shared memory, ``l_x`` for a
    local array."""
    return f"{'s' if buffer.kind is ir.BufferKind.SHARED else 'l'}_{buffer.name}"


def position_name(which: ir.Position) -> str:
    """The C name the body reads position ``which`` from (see :attr:`Emitted.positions`)."""
    return f"pos_{which.name.lower()}"


class Dialect:
    """How one C-family language spells what the walker emits.

    A subclass gives :attr:`type_names` and the four per-axis position primitives; the rest has
    C defaults that CUDA C++ shares. Positions flatten as :class:`~cubejit.ir.nodes.Position`
    documents, from the primitives, in ``u32`` arithmetic.
    """

    type_names: dict[str, str] = {}
    """Spelling of each supported scalar, by IR name; a scalar missing here is unsupported."""
    helper_qualifier: str = "static inline"
    """What precedes each helper function of the prelude."""
    offset_type: Scalar = u64
    """The type a tensor's element offset is computed in: a launch keeps every offset below
    ``2**32``, so ``u32`` is exact; the C default is 64 bits, which keeps the offset affine in a
    row loop's counter (no wrap to prove), so the C compiler vectorises along it."""
    narrowed: frozenset[str] = frozenset({"f16", "bf16", "i8", "i16", "u8", "u16"})
    """Scalars whose arithmetic C computes in a wider type: results are cast back."""
    plane_size: int = 1
    """Units per plane (``PLANE_DIM``)."""

    def type_name(self, t: Scalar) -> str:
        try:
            return self.type_names[t.name]
        except KeyError:
            raise UnsupportedError(f"this backend has no {t.name}") from None

    def unit_axis(self, axis: int) -> str:
        """The unit's position within its cube along ``axis`` (0: x)."""
        raise NotImplementedError

    def cube_axis(self, axis: int) -> str:
        """The cube's position within the launch along ``axis``."""
        raise NotImplementedError

    def dim_axis(self, axis: int) -> str:
        """Units per cube along ``axis``."""
        raise NotImplementedError

    def count_axis(self, axis: int) -> str:
        """Cubes in the launch along ``axis``."""
        raise NotImplementedError

    def position(self, which: ir.Position) -> str:
        """An expression (``u32``) for position ``which``."""
        kind, axis = which.kind, which.axis
        if kind is ir.PositionKind.ABSOLUTE_POS:
            if axis is not None:
                cube, dim = self.cube_axis(axis), self.dim_axis(axis)
                return f"(({cube} * {dim}) + {self.unit_axis(axis)})"
            width = [f"({self.count_axis(a)} * {self.dim_axis(a)})" for a in range(2)]
            x, y, z = (self.position(ir.Position.of(kind, a)) for a in ir.Axis)
            return f"({x} + ({y} * {width[0]}) + ({z} * {width[0]} * {width[1]}))"
        if kind is ir.PositionKind.UNIT_POS:
            return self._flat(axis, self.unit_axis, self.dim_axis)
        if kind is ir.PositionKind.CUBE_POS:
            return self._flat(axis, self.cube_axis, self.count_axis)
        if kind is ir.PositionKind.CUBE_DIM:
            return self._product(axis, self.dim_axis)
        if kind is ir.PositionKind.CUBE_COUNT:
            return self._product(axis, self.count_axis)
        if kind is ir.PositionKind.PLANE_DIM:
            return f"{self.plane_size}u"
        if kind is ir.PositionKind.UNIT_POS_PLANE:
            return self.lane()
        assert_never(kind)

    def lane(self) -> str:
        """The unit's lane in its plane (``UNIT_POS_PLANE``)."""
        if self.plane_size == 1:
            return "0u"
        return f"({self.position(ir.Position.UNIT_POS)} % {self.plane_size}u)"

    def sync(self, group: ir.SyncCube | ir.SyncPlane) -> str | None:
        """The statement a barrier is, or None where it needs none (a plane of one unit)."""
        raise UnsupportedError(f"this backend has no {type(group).__name__} statement")

    def atomic(
        self,
        op: ir.AtomicOp,
        t: Scalar,
        address: str,
        args: list[str],
        call: Call,
        shared: bool = False,
    ) -> str:
        """The expression doing ``op`` atomically on the element at ``address`` (a pointer to
        a ``t``; ``shared`` when it is in shared memory), giving the value held before (a store
        gives nothing of use). ``call`` calls a helper of :meth:`own_helper` and has it
        defined."""
        raise UnsupportedError(f"this backend has no atomic {op.value}")

    def plane(self, fn: ir.PlaneFn, t: Scalar, args: list[str], call: Call) -> str:
        """The expression computing plane operation ``fn`` (its result a ``t``)."""
        raise UnsupportedError(f"this backend has no {fn.value}")

    def print_line(self, format_: str, args: list[str], helpers: set[tuple[str, Scalar]]) -> str:
        """The call printing ``format_`` (a C string literal, ``printf``'s conversions) with
        ``args``; it adds to ``helpers`` what it calls."""
        helpers.add(("print", bool_t))
        return f"cj_print({', '.join((format_, *args))})"

    def own_helper(self, helper: str, t: Scalar) -> str | None:
        """The definition of a helper this dialect's :meth:`atomic` or :meth:`plane` calls,
        or None for the shared helpers of :mod:`~cubejit.backends.cstyle_helpers`."""
        return None

    @staticmethod
    def _flat(axis: int | None, value: Callable[[int], str], extent: Callable[[int], str]) -> str:
        if axis is not None:
            return value(axis)
        return (
            f"({value(0)} + ({value(1)} * {extent(0)}) + ({value(2)} * {extent(0)} * {extent(1)}))"
        )

    @staticmethod
    def _product(axis: int | None, value: Callable[[int], str]) -> str:
        return value(axis) if axis is not None else f"({value(0)} * {value(1)} * {value(2)})"

    def libm(self, base: str, t: Scalar) -> str:
        """The C math function ``base`` (``"sqrt"``) for ``t``, an ``f32`` or ``f64``."""
        return f"{base}f" if t == f32 else base

    def math_type(self, t: Scalar) -> Scalar:
        """The float type math on ``t`` is computed in (``f32`` for half precision)."""
        return t if t in (f32, f64) else f32

    def float_literal(self, value: float, t: Scalar) -> str:
        """``value`` as a literal of ``t``, rounded once from the exact value to ``t`` (a
        half type's literal is written as the ``float`` it rounds to, which is exact)."""
        if t not in (f32, f64):
            value = round_float(value, t)
        if math.isnan(value):
            text = "NAN"
        elif math.isinf(value):
            text = "INFINITY" if value > 0 else "(-INFINITY)"
        else:
            text = value.hex() + ("f" if t != f64 else "")
            if value < 0 or text.startswith("-"):
                text = f"({text})"
        return text if t in (f32, f64) else f"(({self.type_name(t)}){text})"

    def int_literal(self, value: int, t: Scalar) -> str:
        if t.kind is Kind.UINT:
            return f"{value}u" if t.bits == 32 else f"(({self.type_name(t)}){value}ull)"
        suffix = "" if t.bits == 32 else "ll"
        if value == -(2 ** (t.bits - 1)):
            text = f"(-{-value - 1}{suffix} - 1{suffix})"
        else:
            text = f"{value}{suffix}" if value >= 0 else f"(-{-value}{suffix})"
        return text if t.bits == 32 else f"(({self.type_name(t)}){text})"

    def cast(self, code: str, source: Scalar, target: Scalar) -> str:
        if target == bool_t:
            return f"(({code}) != 0)"
        return f"(({self.type_name(target)})({code}))"

    whole_lines: bool = True
    """Whether a line whose lanes are all read (or all written) moves as one aligned struct
    (:mod:`~cubejit.backends.cstyle_lines`); otherwise its lanes stay adjacent scalar
    accesses, for a compiler whose loop vectoriser sees through them."""

    def line_struct(self, elem: Scalar, width: int) -> str:
        """The definition of the struct one line of ``width`` lanes of ``elem`` is moved as,
        aligned to its size so that it is one wide load or store."""
        size = width * elem.itemsize
        return (
            f"typedef struct {{ {self.type_name(elem)} v[{width}]; }} "
            f"__attribute__((aligned({size}))) {struct_name(elem, width)};"
        )

    def bitcast(self, code: str, source: Scalar, target: Scalar) -> str | None:
        """The bits of ``code`` read as ``target`` (same width), or None where the walker should
        call its ``memcpy`` helper. Between integers it is the conversion, which keeps bits."""
        if source.is_int and target.is_int:
            return self.cast(code, source, target)
        return None


Call = Callable[[str, Scalar, list[str]], str]
"""``call(helper, t, args)``: the text calling helper ``cj_<helper>_<t>`` on ``args``."""


@dataclass(frozen=True, slots=True)
class Emitted:
    """A kernel body in a dialect, ready for a backend's wrapper."""

    helpers: str
    """Definitions of the helper functions the body calls (floor division, integer pow...),
    each preceded by the dialect's qualifier; empty when it calls none."""
    positions: tuple[ir.Position, ...]
    """The positions the body reads, in enum order; the wrapper need compute only these."""
    lines: tuple[str, ...]
    """The body, unindented: position and local declarations first, then the statements."""
    values: tuple[str, ...] = ()
    """The text of each expression of ``emit_body``'s ``values``, in order."""


def emit_body(
    kernel: ir.KernelIR,
    dialect: Dialect,
    values: tuple[ir.Expr, ...] = (),
    contiguous: frozenset[str] = frozenset(),
) -> Emitted:
    """The body of ``kernel`` in ``dialect``, and the text of ``values``: expressions the
    wrapper evaluates itself (a loop bound, say), whose helpers join :attr:`Emitted.helpers`.
    The tensors named in ``contiguous`` have stride 1 along their last dimension (the launch
    checked it), which their indexing then omits. Raises UnsupportedError for a scalar the
    dialect does not have, naming the kernel."""
    walker = Walker(kernel, dialect, contiguous)
    try:
        return walker.emit(values)
    except UnsupportedError as e:
        raise UnsupportedError(f"kernel {kernel.name}: {e}", kernel=kernel.name) from None


class Walker:
    """The walk from IR to text. :func:`emit_body` is its usual use; a backend that places
    blocks itself (the CPU's regions between barriers) writes them with :meth:`block` into
    :attr:`lines`, expressions with :meth:`expr`, and then asks :meth:`helper_text`."""

    def __init__(
        self,
        kernel: ir.KernelIR,
        dialect: Dialect,
        contiguous: frozenset[str] = frozenset(),
        spell: dict[str, str] | None = None,
        exits: Callable[[ir.Break | ir.Continue | ir.Return], str] | None = None,
        inline_positions: bool = False,
    ) -> None:
        self.kernel = kernel
        self.d = dialect
        self.contiguous = contiguous
        self.ranks = {p.name: p.type.rank for p in kernel.tensors()}
        self.params = {p.name for p in kernel.params}
        self.buffers = {b.name: buffer_name(b) for b in kernel.allocations}
        self.spell = spell or {}
        """Names spelled otherwise than by their decoration (a local kept per unit)."""
        self.exits = exits
        """How a ``break``/``continue`` outside any loop of the block, or a ``return``, is
        written, when the caller places the block inside loops of its own."""
        self.inline_positions = inline_positions
        """Whether positions are spelled by the dialect where read (no declared names)."""
        self.helpers: set[tuple[str, Scalar]] = set()
        self.loops = 0
        self.open_loops = 0
        self.lines: list[str] = []
        self.widths = line_widths(kernel) if dialect.whole_lines else {}
        self.elems = {
            p.name: p.type.elem
            for p in kernel.params
            if isinstance(p.type, ArrayType | TensorType) and p.name in self.widths
        }
        self.whole: dict[tuple[str, ir.Expr], str] = {}
        """The local each line loaded whole is held in, while its run is emitted."""
        self.structs: set[tuple[Scalar, int]] = set()
        self.held = 0

    def emit(self, values: tuple[ir.Expr, ...]) -> Emitted:
        used = {e.which for e in walk_exprs(self.kernel.body) if isinstance(e, ir.PositionOf)}
        positions = tuple(p for p in ir.Position if p in used)
        head = [
            f"const {self.d.type_name(u32)} {position_name(p)} = {self.d.position(p)};"
            for p in positions
        ]
        for local in self.kernel.locals:
            zero = self.literal(ir.Const(False if local.type == bool_t else 0, local.type))
            head.append(f"{self.d.type_name(local.type)} {local_name(local.name)} = {zero};")
        for b in self.kernel.allocations:
            if b.kind is ir.BufferKind.LOCAL:
                head.append(f"{self.d.type_name(b.elem)} {buffer_name(b)}[{b.size}];")
        self.block(self.kernel.body, 0)
        texts = tuple(self.expr(value) for value in values)
        return Emitted(self.helper_text(), positions, (*head, *self.lines), texts)

    def helper_text(self) -> str:
        """The definitions of every helper the text written so far calls."""
        helpers = helper_definitions(sorted(self.helpers, key=_helper_key), self.d)
        return with_line_structs(self.structs, helpers, self.d)

    def line(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    def block(self, stmts: tuple[ir.Stmt, ...], depth: int) -> None:
        if not self.widths:
            for stmt in stmts:
                self.stmt(stmt, depth)
            return
        i = 0
        while i < len(stmts):
            j = i
            while j < len(stmts) and isinstance(stmts[j], ir.Assign | ir.Store):
                j += 1
            if j == i:
                self.stmt(stmts[i], depth)
                i += 1
            else:
                self.straight(stmts[i:j], depth)
                i = j

    def straight(self, run: tuple[ir.Stmt, ...], depth: int) -> None:
        """Assignments and stores, the lines they read whole loaded once each and the lines
        they write whole stored once each (see :mod:`~cubejit.backends.cstyle_lines`)."""
        plan = plan_run(run, self.widths)
        position = 0
        while position < len(run):
            for array, first in plan.loads.get(position, ()):
                self.load_line(array, first, depth)
            span = plan.stores.get(position)
            if span is None:
                self.stmt(run[position], depth)
                position += 1
                continue
            for later in range(position + 1, position + span):
                for array, first in plan.loads.get(later, ()):
                    self.load_line(array, first, depth)
            self.store_line(run[position : position + span], depth)
            position += span
        self.whole.clear()

    def line_pointer(self, array: str, first: ir.Expr) -> tuple[str, str]:
        elem, width = self.elems[array], self.widths[array]
        self.structs.add((elem, width))
        name = struct_name(elem, width)
        return name, f"(({name}*)(&{self.array(array)}[{self.expr(first)}]))"

    def load_line(self, array: str, first: ir.Expr, depth: int) -> None:
        name, pointer = self.line_pointer(array, first)
        held = f"cj_line{self.held}"
        self.held += 1
        self.line(depth, f"const {name} {held} = *{pointer};")
        self.whole[(array, first)] = held

    def store_line(self, group: tuple[ir.Stmt, ...], depth: int) -> None:
        lane0 = group[0]
        assert isinstance(lane0, ir.Store)
        access = lane_access(lane0, self.widths)
        assert access is not None
        name, pointer = self.line_pointer(access.array, access.first)
        lanes = []
        for s in group:
            assert isinstance(s, ir.Store)
            lanes.append(self.expr(s.value))
        held = f"cj_line{self.held}"
        self.held += 1
        self.line(depth, f"{name} {held} = {{{{{', '.join(lanes)}}}}};")
        self.line(depth, f"*{pointer} = {held};")

    def stmt(self, s: ir.Stmt, depth: int) -> None:
        if isinstance(s, ir.Assign):
            self.line(depth, f"{self.var(s.name)} = {self.expr(s.value)};")
        elif isinstance(s, ir.Store):
            self.line(depth, f"{self.array(s.array)}[{self.expr(s.index)}] = {self.expr(s.value)};")
        elif isinstance(s, ir.If):
            self.if_chain(s, depth, "if")
        elif isinstance(s, ir.RangeFor):
            self.range_for(s, depth)
        elif isinstance(s, ir.While):
            self.line(depth, f"while ({self.expr(s.cond)}) {{")
            self.open_loops += 1
            self.block(s.body, depth + 1)
            self.open_loops -= 1
            self.line(depth, "}")
        elif isinstance(s, ir.Break | ir.Continue):
            if self.exits is not None and self.open_loops == 0:
                self.line(depth, self.exits(s))
            else:
                self.line(depth, "break;" if isinstance(s, ir.Break) else "continue;")
        elif isinstance(s, ir.Return):
            self.line(depth, "return;" if self.exits is None else self.exits(s))
        elif isinstance(s, ir.Atomic):
            self.atomic(s, depth)
        elif isinstance(s, ir.SyncCube | ir.SyncPlane):
            text = self.d.sync(s)
            if text is not None:
                self.line(depth, text)
        elif isinstance(s, ir.PlaneOp):
            t = self.kernel_type(s.result)
            args = [self.expr(a) for a in s.args]
            self.line(depth, f"{self.var(s.result)} = {self.d.plane(s.fn, t, args, self.call)};")
        elif isinstance(s, ir.Print):
            self.line(depth, f"{self.print_call(s)};")
        elif isinstance(s, ir.BoundsFailure):
            self.helpers.add(("bounds_failure", i64))
            index, length = self.expr(s.index), self.expr(s.length)
            self.line(depth, f"cj_bounds_failure({s.site}, {index}, {length});")
        else:
            assert_never(s)

    def print_call(self, s: ir.Print) -> str:
        """The call writing ``s``'s line (see :mod:`cubejit.backends.inspection`)."""
        text, args = literal_text(s.text[0]), []
        for arg, after in zip(s.args, s.text[1:], strict=True):
            wide = widened(arg.type, f64, i64, u64)
            value = self.expr(arg if wide == arg.type else ir.Cast(arg, wide))
            format_, values = print_format(Item(arg.type), [value])
            text += format_ + literal_text(after)
            args += values
        return self.d.print_line(c_string(text + "\n"), args, self.helpers)

    def atomic(self, s: ir.Atomic, depth: int) -> None:
        t = self.element(s.array)
        address = f"&{self.array(s.array)}[{self.expr(s.index)}]"
        shared = any(
            b.name == s.array and b.kind is ir.BufferKind.SHARED for b in self.kernel.allocations
        )
        args = [self.expr(a) for a in s.args]
        code = self.d.atomic(s.op, t, address, args, self.call, shared)
        if s.result is None:
            self.line(depth, f"{code};")
        else:
            self.line(depth, f"{self.var(s.result)} = {code};")

    def kernel_type(self, name: str) -> Scalar:
        """The type of local or scalar parameter ``name``."""
        for local in self.kernel.locals:
            if local.name == name:
                return local.type
        for p in self.kernel.params:
            if p.name == name and isinstance(p.type, Scalar):
                return p.type
        raise KeyError(name)

    def element(self, array: str) -> Scalar:
        """The element type of array parameter or buffer ``array``."""
        for b in self.kernel.allocations:
            if b.name == array:
                return b.elem
        for p in self.kernel.params:
            if p.name == array and isinstance(p.type, ArrayType | TensorType):
                return p.type.elem
        raise KeyError(array)

    def array(self, name: str) -> str:
        """The C spelling of array parameter or buffer ``name``."""
        if name in self.spell:
            return self.spell[name]
        return self.buffers.get(name) or param_name(name)

    def if_chain(self, s: ir.If, depth: int, keyword: str) -> None:
        self.line(depth, f"{keyword} ({self.expr(s.cond)}) {{")
        self.block(s.then, depth + 1)
        if len(s.orelse) == 1 and isinstance(s.orelse[0], ir.If):
            self.if_chain(s.orelse[0], depth, "} else if")
            return
        if s.orelse:
            self.line(depth, "} else {")
            self.block(s.orelse, depth + 1)
        self.line(depth, "}")

    def range_for(self, s: ir.RangeFor, depth: int) -> None:
        t = s.start.type
        name = self.d.type_name(t)
        n = self.loops
        self.loops += 1
        counter, stop, step = f"cj_i{n}", f"cj_stop{n}", f"cj_step{n}"
        self.line(depth, "{")
        self.line(depth + 1, f"const {name} {stop} = {self.expr(s.stop)};")
        if isinstance(s.step, ir.Const):
            step_code = self.expr(s.step)
            cond = f"({counter} {'<' if s.step.value > 0 else '>'} {stop})"
        else:
            self.line(depth + 1, f"const {name} {step} = {self.expr(s.step)};")
            step_code = step
            if t.kind is Kind.UINT:
                cond = f"({counter} < {stop})"
            else:
                cond = f"(({step} > 0) ? ({counter} < {stop}) : ({counter} > {stop}))"
        start = self.expr(s.start)
        header = f"{name} {counter} = {start}; {cond}; {counter} += {step_code}"
        self.line(depth + 1, f"for ({header}) {{")
        self.line(depth + 2, f"{self.var(s.var)} = {counter};")
        self.open_loops += 1
        self.block(s.body, depth + 2)
        self.open_loops -= 1
        self.line(depth + 1, "}")
        self.line(depth, "}")

    def var(self, name: str) -> str:
        if name in self.spell:
            return self.spell[name]
        return param_name(name) if name in self.params else local_name(name)

    def literal(self, c: ir.Const) -> str:
        if c.type == bool_t:
            return "true" if c.value else "false"
        if c.type.is_float:
            return self.d.float_literal(float(c.value), c.type)
        return self.d.int_literal(int(c.value), c.type)

    def narrow(self, code: str, t: Scalar) -> str:
        return f"(({self.d.type_name(t)}){code})" if t.name in self.d.narrowed else code

    def call(self, helper: str, t: Scalar, args: list[str]) -> str:
        self.helpers.add((helper, t))
        return f"cj_{helper}_{t.name}({', '.join(args)})"

    def expr(self, e: ir.Expr) -> str:
        if isinstance(e, ir.Const):
            return self.literal(e)
        if isinstance(e, ir.Var):
            return self.var(e.name)
        if isinstance(e, ir.PositionOf):
            return self.d.position(e.which) if self.inline_positions else position_name(e.which)
        if isinstance(e, ir.Length):
            return length_name(e.array)
        if isinstance(e, ir.Shape):
            return shape_name(e.tensor, e.dim)
        if isinstance(e, ir.Stride):
            return self.stride(e.tensor, e.dim)
        if isinstance(e, ir.TensorIndex):
            return self.tensor_index(e)
        if isinstance(e, ir.Load):
            if self.whole:
                access = lane_access(e, self.widths)
                if access is not None and (access.array, access.first) in self.whole:
                    return f"{self.whole[(access.array, access.first)]}.v[{access.lane}]"
            return f"{self.array(e.array)}[{self.expr(e.index)}]"
        if isinstance(e, ir.Unary):
            return self.unary(e)
        if isinstance(e, ir.Binary):
            return self.binary(e)
        if isinstance(e, ir.Cast):
            source = e.value.type
            if source.is_float and e.type.is_int:
                return self.call(f"to_{e.type.name}", source, [self.expr(e.value)])
            return self.d.cast(self.expr(e.value), source, e.type)
        if isinstance(e, ir.Bitcast):
            code = self.expr(e.value)
            direct = self.d.bitcast(code, e.value.type, e.type)
            return direct or self.call(f"bitcast_{e.type.name}", e.value.type, [code])
        if isinstance(e, ir.Math):
            return self.math(e)
        if isinstance(e, ir.Select):
            cond, yes, no = (self.expr(x) for x in (e.cond, e.if_true, e.if_false))
            return f"({cond} ? {yes} : {no})"
        assert_never(e)

    def stride(self, tensor: str, dim: int) -> str:
        if tensor in self.contiguous and dim == self.ranks[tensor] - 1:
            return self.d.int_literal(1, u32)
        return stride_name(tensor, dim)

    def tensor_index(self, e: ir.TensorIndex) -> str:
        """The offset as a sum of products in the dialect's offset type; the contiguous last
        dimension's index is added as it is, so that indexing along it is affine in the row
        loop's counter."""
        terms = []
        offset = self.d.offset_type
        for dim, index in enumerate(e.indices):
            code = self.expr(index)
            if index.type != offset:
                code = self.d.cast(code, index.type, offset)
            if e.tensor in self.contiguous and dim == len(e.indices) - 1:
                terms.append(code)
            else:
                terms.append(f"({code} * {stride_name(e.tensor, dim)})")
        return f"({' + '.join(terms)})"

    def unary(self, e: ir.Unary) -> str:
        operand = self.expr(e.operand)
        if e.op is ir.UnaryOp.NOT:
            return f"(!{operand})"
        if e.op is ir.UnaryOp.NEG and e.type.is_int:
            return self.wrapping("-", self.literal(ir.Const(0, e.type)), operand, e.type)
        symbol = "-" if e.op is ir.UnaryOp.NEG else "~"
        return self.narrow(f"({symbol}{operand})", e.type)

    def wrapping(self, symbol: str, lhs: str, rhs: str, t: Scalar) -> str:
        """``lhs symbol rhs`` on integers of ``t``, wrapping (see ``WRAPPING``)."""
        if t.kind is Kind.UINT and t.bits >= 32:
            return f"({lhs} {symbol} {rhs})"
        wide = self.d.type_name(u64 if t.bits == 64 else u32)
        return f"(({self.d.type_name(t)})(({wide}){lhs} {symbol} ({wide}){rhs}))"

    def shift(self, e: ir.Binary, lhs: str, rhs: str) -> str:
        """A shift with numpy's meaning for every count: a constant count below the width is
        C's operator (on the unsigned type for a left shift, which may not overflow), any
        other count goes through the helper (0, or -1 for a negative shifted right)."""
        t = e.type
        count = e.rhs
        if isinstance(count, ir.Const) and 0 <= int(count.value) < t.bits:
            if e.op is ir.BinaryOp.SHR:
                return self.narrow(f"({lhs} >> {rhs})", t)
            return self.wrapping("<<", lhs, rhs, t)
        helper = "shl" if e.op is ir.BinaryOp.SHL else "shr"
        return self.call(helper, t, [lhs, self.d.cast(rhs, count.type, u64)])

    def binary(self, e: ir.Binary) -> str:
        lhs, rhs = self.expr(e.lhs), self.expr(e.rhs)
        op = e.op
        if op in COMPARE:
            return f"({lhs} {COMPARE[op]} {rhs})"
        t = e.type
        if op in (ir.BinaryOp.FLOORDIV, ir.BinaryOp.MOD):
            return self.call("floordiv" if op is ir.BinaryOp.FLOORDIV else "mod", t, [lhs, rhs])
        if op is ir.BinaryOp.POW:
            if t.is_float:
                return self.float_math("pow", t, [lhs, rhs])
            return self.call("pow", t, [lhs, self.d.cast(rhs, e.rhs.type, i64)])
        if op in (ir.BinaryOp.SHL, ir.BinaryOp.SHR):
            return self.shift(e, lhs, rhs)
        if op in WRAPPING and t.is_int:
            return self.wrapping(ARITH[op], lhs, rhs, t)
        return self.narrow(f"({lhs} {ARITH[op]} {rhs})", t)

    def float_math(self, base: str, t: Scalar, args: list[str]) -> str:
        compute = self.d.math_type(t)
        if compute == t:
            return f"{self.d.libm(base, t)}({', '.join(args)})"
        widened = [self.d.cast(a, t, compute) for a in args]
        return self.d.cast(f"{self.d.libm(base, compute)}({', '.join(widened)})", compute, t)

    def math(self, e: ir.Math) -> str:
        args = [self.expr(a) for a in e.args]
        t = e.type
        if t.is_float:
            return self.float_math(FLOAT_MATH[e.fn], t, args)
        if e.fn is ir.MathFn.ABS:
            return args[0] if t.kind is Kind.UINT else self.call("abs", t, args)
        if e.fn in (ir.MathFn.MIN, ir.MathFn.MAX):
            return self.call(e.fn.value, t, args)
        raise UnsupportedError(f"{e.fn.value} takes floats, not {t.name}")


def with_line_structs(structs: set[tuple[Scalar, int]], helpers: str, dialect: Dialect) -> str:
    """``helpers`` preceded by the definitions of the line structs ``structs`` (element and
    width) that a body moves whole lines as."""
    ordered = sorted(structs, key=lambda s: (s[0].name, s[1]))
    definitions = [dialect.line_struct(e, w) for e, w in ordered]
    if not definitions:
        return helpers
    return "\n".join(definitions) + ("\n\n" + helpers if helpers else "")


def _helper_key(helper: tuple[str, Scalar]) -> tuple[str, str]:
    return (helper[0], helper[1].name)
