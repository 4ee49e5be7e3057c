"""IR to one C11 translation unit: the CPU backend's wrapper around the shared walker.

The unit holds the helpers the body calls, a ``static inline`` unit function (the kernel body,
run once per unit; a ``return`` ends just that unit) and the launch entry :data:`ENTRY`, which
reads the argument block of :mod:`cubejit.backends.cpu.layout`, runs the cubes over OpenMP's
thread pool (one thread for a single cube) and each cube's units in order z, y, x. Array
pointers carry ``__builtin_assume_aligned`` with the launch's alignment variant so loops
vectorise. cube_dim is baked in as constants (it is part of the kernel id); the text names
neither the kernel nor its id, so equal IR gives equal text and one shared artifact.
"""

from __future__ import annotations

from cubejit.backends.cpu.layout import COUNT_SLOTS, SLOT_BYTES, slots
from cubejit.backends.cstyle import (
    INDENT,
    Dialect,
    emit_body,
    length_name,
    param_name,
)
from cubejit.errors import UnsupportedError
from cubejit.ir.nodes import KernelIR
from cubejit.ir.types import ArrayType

ENTRY = "cubejit_launch"
"""The symbol every CPU artifact exports: ``void cubejit_launch(const unsigned char *args)``."""

_AXES = ("x", "y", "z")


class CDialect(Dialect):
    """C11 as GCC and Clang compile it; ``f16`` is ``_Float16``, ``bf16`` is not supported."""

    type_names = {
        "bool": "bool",
        "i32": "int32_t",
        "i64": "int64_t",
        "u32": "uint32_t",
        "u64": "uint64_t",
        "f16": "_Float16",
        "f32": "float",
        "f64": "double",
    }

    def unit_axis(self, axis: int) -> str:
        return f"cj_unit_{_AXES[axis]}"

    def cube_axis(self, axis: int) -> str:
        return f"cj_cube_{_AXES[axis]}"

    def dim_axis(self, axis: int) -> str:
        return f"CJ_DIM_{_AXES[axis].upper()}"

    def count_axis(self, axis: int) -> str:
        return f"cj_count_{_AXES[axis]}"


_PROLOGUE = """\
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
"""

_POSITION_ARGS = ", ".join(
    f"uint32_t cj_{kind}_{a}" for kind in ("cube", "unit", "count") for a in _AXES
)
_POSITION_VALUES = ", ".join(f"cj_{kind}_{a}" for kind in ("cube", "unit", "count") for a in _AXES)


def translation_unit(kernel: KernelIR, cube_dim: tuple[int, int, int], align: int) -> str:
    """The C text of ``kernel`` for ``cube_dim``, its arrays aligned to ``align`` bytes."""
    dialect = CDialect()
    for p in kernel.params:
        t = p.type.elem if isinstance(p.type, ArrayType) else p.type
        if t.name not in dialect.type_names:
            raise UnsupportedError(
                f"kernel {kernel.name}: this backend has no {t.name}", kernel=kernel.name
            )
    body = emit_body(kernel, dialect)
    signature, reads, values = [], [], []
    for p, slot in zip(kernel.params, slots(kernel.params), strict=True):
        name = param_name(p.name)
        offset = slot * SLOT_BYTES
        if isinstance(p.type, ArrayType):
            elem = dialect.type_name(p.type.elem)
            length = length_name(p.name)
            signature += [f"{elem} *{name}", f"uint32_t {length}"]
            values += [name, length]
            reads += [
                f"{elem} *{name} = ({elem} *)__builtin_assume_aligned("
                f"(void *)(uintptr_t)cj_slot(cj_args, {offset}), CJ_ALIGN);",
                f"uint32_t {length} = (uint32_t)cj_slot(cj_args, {offset + SLOT_BYTES});",
            ]
        else:
            scalar = dialect.type_name(p.type)
            signature.append(f"{scalar} {name}")
            values.append(name)
            reads += [f"{scalar} {name};", f"memcpy(&{name}, cj_args + {offset}, sizeof {name});"]
    signature.append(_POSITION_ARGS)
    values.append(_POSITION_VALUES)
    counts = [
        f"uint32_t cj_count_{a} = (uint32_t)cj_slot(cj_args, {i * SLOT_BYTES});"
        for i, a in enumerate(_AXES[:COUNT_SLOTS])
    ]
    parts = [
        _PROLOGUE,
        f"#define CJ_ALIGN {align}",
        *(f"#define CJ_DIM_{a.upper()} {d}u" for a, d in zip(_AXES, cube_dim, strict=True)),
        "",
        "static inline uint64_t cj_slot(const unsigned char *args, size_t offset) {",
        f"{INDENT}uint64_t value;",
        f"{INDENT}memcpy(&value, args + offset, sizeof value);",
        f"{INDENT}return value;",
        "}",
        "",
    ]
    if body.helpers:
        parts += [body.helpers, ""]
    parts += [
        "static inline __attribute__((always_inline)) void cj_unit(",
        *(f"{INDENT}{INDENT}{arg}," for arg in signature[:-1]),
        f"{INDENT}{INDENT}{signature[-1]}) {{",
        *(f"{INDENT}{line}" for line in body.lines),
        "}",
        "",
        f"void {ENTRY}(const unsigned char *cj_args) {{",
        *(f"{INDENT}{line}" for line in (*counts, *reads)),
        f"{INDENT}const int64_t cj_cubes = (int64_t)cj_count_x * cj_count_y * cj_count_z;",
        f"{INDENT}#pragma omp parallel for schedule(static) if(cj_cubes > 1)",
        f"{INDENT}for (int64_t cj_c = 0; cj_c < cj_cubes; ++cj_c) {{",
        f"{INDENT * 2}const uint32_t cj_cube_x = (uint32_t)(cj_c % cj_count_x);",
        f"{INDENT * 2}const uint32_t cj_cube_y = (uint32_t)((cj_c / cj_count_x) % cj_count_y);",
        f"{INDENT * 2}const uint32_t cj_cube_z = "
        "(uint32_t)(cj_c / ((int64_t)cj_count_x * cj_count_y));",
        f"{INDENT * 2}for (uint32_t cj_unit_z = 0; cj_unit_z < CJ_DIM_Z; ++cj_unit_z) {{",
        f"{INDENT * 3}for (uint32_t cj_unit_y = 0; cj_unit_y < CJ_DIM_Y; ++cj_unit_y) {{",
        f"{INDENT * 4}for (uint32_t cj_unit_x = 0; cj_unit_x < CJ_DIM_X; ++cj_unit_x) {{",
        f"{INDENT * 5}cj_unit({', '.join(values)});",
        f"{INDENT * 4}}}",
        f"{INDENT * 3}}}",
        f"{INDENT * 2}}}",
        f"{INDENT}}}",
        "}",
        "",
    ]
    return "\n".join(parts)
