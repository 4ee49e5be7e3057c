"""IR to one C11 translation unit: the CPU backend's wrapper around the shared walker.

The unit holds the helpers the body calls, a ``static inline`` unit function (the kernel body,
run once per unit; a ``return`` ends just that unit) and the launch entry :data:`ENTRY`, which
reads the argument block of :mod:`cubejit.backends.cpu.layout`, runs the cubes over OpenMP's
thread pool (one thread for a single cube; chunks of cubes go to whichever thread is free, so a
core busy with other work delays a launch little) and each cube's units in order z, y, x. A row of
units along x is one counted loop over a position, its bounds guard hoisted into the loop's end
(:mod:`cubejit.backends.unit_loop`), and libm calls have vector forms
(:mod:`cubejit.backends.cpu.vector_math`), so the C compiler vectorises the row. Array pointers
carry ``__builtin_assume_aligned`` with the launch's alignment variant; a tensor whose innermost
dimension the launch found contiguous is indexed along it without a multiply. cube_dim is baked
in as
constants (it is part of the kernel id); the text names neither the kernel nor its id, so equal
IR gives equal text and one shared artifact.
"""

from __future__ import annotations

from dataclasses import replace

from cubejit.backends.cpu import cooperation
from cubejit.backends.cpu.layout import COUNT_SLOTS, SLOT_BYTES, slots
from cubejit.backends.cpu.regions import cube_body, needs_regions
from cubejit.backends.cpu.vector_math import vector_declarations, vector_name
from cubejit.backends.cstyle import (
    INDENT,
    Call,
    Dialect,
    emit_body,
    length_name,
    param_name,
    shape_name,
    stride_name,
)
from cubejit.backends.inspection import C_PRINT, C_RECORD
from cubejit.backends.unit_loop import plan_unit_loop
from cubejit.errors import UnsupportedError
from cubejit.ir import nodes as ir
from cubejit.ir.nodes import KernelIR, Position
from cubejit.ir.types import ArrayType, Scalar, TensorType
from cubejit.runtime.layout import SlotKind, param_slots

ENTRY = "cubejit_launch"
"""The symbol every CPU artifact exports: ``void cubejit_launch(const unsigned char *args)``."""

_AXES = ("x", "y", "z")


class CDialect(Dialect):
    """C11 as GCC and Clang compile it; ``f16`` is ``_Float16``, ``bf16`` is not supported.

    With a ``lead`` position, the unit is one step of a row loop whose counter ``cj_p`` is that
    position and whose first step was ``cj_first``: the unit's x is their difference.
    """

    whole_lines = False
    type_names = {
        "bool": "bool",
        "i8": "int8_t",
        "i16": "int16_t",
        "i32": "int32_t",
        "i64": "int64_t",
        "u8": "uint8_t",
        "u16": "uint16_t",
        "u32": "uint32_t",
        "u64": "uint64_t",
        "f16": "_Float16",
        "f32": "float",
        "f64": "double",
    }

    def __init__(self, lead: Position | None = None) -> None:
        self.lead = lead

    def unit_axis(self, axis: int) -> str:
        if axis == 0 and self.lead is not None:
            return "(cj_p - cj_first)"
        return f"cj_unit_{_AXES[axis]}"

    def position(self, which: Position) -> str:
        return "cj_p" if which is self.lead else super().position(which)

    def libm(self, base: str, t: Scalar) -> str:
        return vector_name(super().libm(base, t))

    def cube_axis(self, axis: int) -> str:
        return f"cj_cube_{_AXES[axis]}"

    def sync(self, group: ir.SyncCube | ir.SyncPlane) -> str | None:
        """A plane is one unit, so ``sync_plane`` waits for no one; ``sync_cube`` splits the
        cube's regions (:mod:`cubejit.backends.cpu.regions`) and never reaches the walker."""
        if isinstance(group, ir.SyncPlane):
            return None
        return super().sync(group)

    def atomic(
        self,
        op: ir.AtomicOp,
        t: Scalar,
        address: str,
        args: list[str],
        call: Call,
        shared: bool = False,
    ) -> str:
        """Shared memory belongs to the one thread running its cube: its atomics are plain."""
        if shared:
            return cooperation.plain(op, t, address, args, call)
        return cooperation.atomic(op, t, address, args, call)

    def plane(self, fn: ir.PlaneFn, t: Scalar, args: list[str], call: Call) -> str:
        zero, one = (self.literal_of(v, t) for v in (0, 1))
        return cooperation.plane(fn, t, args, zero, one)

    def literal_of(self, value: int, t: Scalar) -> str:
        if t.is_float:
            return self.float_literal(float(value), t)
        return self.int_literal(value, t)

    def own_helper(self, helper: str, t: Scalar) -> str | None:
        if helper == "print":
            return C_PRINT
        if helper == "bounds_failure":
            return C_RECORD
        return cooperation.atomic_helper(helper, t, self.helper_qualifier, self.type_name)

    def dim_axis(self, axis: int) -> str:
        return f"CJ_DIM_{_AXES[axis].upper()}"

    def count_axis(self, axis: int) -> str:
        return f"cj_count_{_AXES[axis]}"


class _CubeLevel(CDialect):
    """Cube-level conditions and bounds of a kernel run as regions: read as unit 0 reads
    them (they are cube-uniform)."""

    def unit_axis(self, axis: int) -> str:
        return "0u"


class _RowStart(CDialect):
    """Positions of a row's first unit, outside the row loop."""

    def unit_axis(self, axis: int) -> str:
        return "0u" if axis == 0 else super().unit_axis(axis)


_PROLOGUE = """\
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
"""

_POSITION_ARGS = ", ".join(
    [
        "uint32_t cj_p",
        "uint32_t cj_first",
        *(f"uint32_t cj_{kind}_{a}" for kind in ("cube", "count") for a in _AXES),
        *(f"uint32_t cj_unit_{a}" for a in _AXES[1:]),
    ]
)
_POSITION_VALUES = ", ".join(
    [
        "cj_p",
        "cj_first",
        *(f"cj_{kind}_{a}" for kind in ("cube", "count") for a in _AXES),
        *(f"cj_unit_{a}" for a in _AXES[1:]),
    ]
)


def translation_unit(
    kernel: KernelIR,
    cube_dim: tuple[int, int, int],
    align: int,
    contiguous: frozenset[str] = frozenset(),
) -> str:
    """The C text of ``kernel`` for ``cube_dim``, its buffers aligned to ``align`` bytes, the
    tensors named in ``contiguous`` of stride 1 along their last dimension."""
    for param in kernel.params:
        t = param.type.elem if isinstance(param.type, ArrayType | TensorType) else param.type
        if t.name not in CDialect.type_names:
            raise UnsupportedError(
                f"kernel {kernel.name}: this backend has no {t.name}", kernel=kernel.name
            )
    counts = [
        f"uint32_t cj_count_{a} = (uint32_t)cj_slot(cj_args, {i * SLOT_BYTES});"
        for i, a in enumerate(_AXES[:COUNT_SLOTS])
    ]
    if needs_regions(kernel):
        helpers, cube = cube_body(kernel, CDialect(None), _CubeLevel(None), contiguous)
        _, reads, _ = _arguments(kernel, CDialect(None))
        unit: list[str] = []
        defines = ["#define CJ_UNITS (CJ_DIM_X * CJ_DIM_Y * CJ_DIM_Z)"]
    else:
        helpers, unit, cube, reads = _unit_loop(kernel, contiguous)
        defines = []
    declarations = vector_declarations("\n".join((helpers, *unit, *cube)))
    parts = [
        _PROLOGUE,
        *([declarations, ""] if declarations else []),
        f"#define CJ_ALIGN {align}",
        *(f"#define CJ_DIM_{a.upper()} {d}u" for a, d in zip(_AXES, cube_dim, strict=True)),
        *defines,
        "",
        "static inline uint64_t cj_slot(const unsigned char *args, size_t offset) {",
        f"{INDENT}uint64_t value;",
        f"{INDENT}memcpy(&value, args + offset, sizeof value);",
        f"{INDENT}return value;",
        "}",
        "",
    ]
    if helpers:
        parts += [helpers, ""]
    if unit:
        parts += [*unit, ""]
    parts += [
        f"void {ENTRY}(const unsigned char *cj_args) {{",
        *(f"{INDENT}{line}" for line in (*counts, *reads)),
        f"{INDENT}const int64_t cj_cubes = (int64_t)cj_count_x * cj_count_y * cj_count_z;",
        f"{INDENT}const int64_t cj_chunk = cj_cubes / (16 * omp_get_max_threads()) + 1;",
        f"{INDENT}#pragma omp parallel for schedule(dynamic, cj_chunk) if(cj_cubes > 1)",
        f"{INDENT}for (int64_t cj_c = 0; cj_c < cj_cubes; ++cj_c) {{",
        f"{INDENT * 2}const uint32_t cj_cube_x = (uint32_t)(cj_c % cj_count_x);",
        f"{INDENT * 2}const uint32_t cj_cube_y = (uint32_t)((cj_c / cj_count_x) % cj_count_y);",
        f"{INDENT * 2}const uint32_t cj_cube_z = "
        "(uint32_t)(cj_c / ((int64_t)cj_count_x * cj_count_y));",
        *(f"{INDENT * 2}{line}" for line in cube),
        f"{INDENT}}}",
        "}",
        "",
    ]
    return "\n".join(parts)


def _arguments(kernel: KernelIR, dialect: CDialect) -> tuple[list[str], list[str], list[str]]:
    """The unit function's parameters, the entry's lines reading the arguments, and the
    values the entry passes the unit function."""
    signature, reads, values = [], [], []
    layout = param_slots(kernel.params)
    for p, slot in zip(layout, slots(layout), strict=True):
        name = param_name(p.name)
        offset = slot * SLOT_BYTES
        if p.is_buffer:
            elem = dialect.type_name(p.scalar)
            length = length_name(p.name)
            reads.append(
                f"{elem} *{name} = ({elem} *)__builtin_assume_aligned("
                f"(void *)(uintptr_t)cj_slot(cj_args, {offset}), CJ_ALIGN);"
            )
            words = [length]
            if p.kind is SlotKind.ARRAY:
                reads.append(
                    f"uint32_t {length} = (uint32_t)cj_slot(cj_args, {offset + SLOT_BYTES});"
                )
            else:
                shapes = [shape_name(p.name, d) for d in range(p.rank)]
                strides = [stride_name(p.name, d) for d in range(p.rank)]
                for k, word in enumerate((*shapes, *strides)):
                    at = offset + (2 + k) * SLOT_BYTES
                    reads.append(f"uint32_t {word} = (uint32_t)cj_slot(cj_args, {at});")
                reads.append(f"uint32_t {length} = {' * '.join(shapes)};")
                words += [*shapes, *strides]
            signature += [f"{elem} *{name}", *(f"uint32_t {w}" for w in words)]
            values += [name, *words]
        else:
            scalar = dialect.type_name(p.scalar)
            signature.append(f"{scalar} {name}")
            values.append(name)
            reads += [f"{scalar} {name};", f"memcpy(&{name}, cj_args + {offset}, sizeof {name});"]
    return signature, reads, values


def _unit_loop(
    kernel: KernelIR, contiguous: frozenset[str]
) -> tuple[str, list[str], list[str], list[str]]:
    """A kernel without barriers: its helpers, its unit function, the lines running one
    cube's rows of units through it, and the entry's reads of the arguments."""
    loop = plan_unit_loop(kernel)
    dialect = CDialect(loop.lead)
    bound = () if loop.bound is None else (loop.bound,)
    body = emit_body(replace(kernel, body=loop.body), dialect, bound, contiguous)
    signature, reads, values = _arguments(kernel, dialect)
    signature.append(_POSITION_ARGS)
    values.append(_POSITION_VALUES)
    if body.values:
        reads.append(f"const uint32_t cj_bound = {body.values[0]};")
    row = [
        f"const uint32_t cj_first = {_RowStart().position(loop.lead)};",
        "uint32_t cj_end = cj_first + CJ_DIM_X;",
        *(["if (cj_bound < cj_end) cj_end = cj_bound;"] if body.values else []),
        "for (uint32_t cj_p = cj_first; cj_p < cj_end; ++cj_p) {",
        f"{INDENT}cj_unit({', '.join(values)});",
        "}",
    ]
    unit = [
        "static inline __attribute__((always_inline)) void cj_unit(",
        *(f"{INDENT}{INDENT}{arg}," for arg in signature[:-1]),
        f"{INDENT}{INDENT}{signature[-1]}) {{",
        *(f"{INDENT}{line}" for line in body.lines),
        "}",
    ]
    cube = [
        "for (uint32_t cj_unit_z = 0; cj_unit_z < CJ_DIM_Z; ++cj_unit_z) {",
        f"{INDENT}for (uint32_t cj_unit_y = 0; cj_unit_y < CJ_DIM_Y; ++cj_unit_y) {{",
        *(f"{INDENT * 2}{line}" for line in row),
        f"{INDENT}}}",
        "}",
    ]
    return body.helpers, unit, cube, reads
