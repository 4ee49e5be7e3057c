"""How a launch hands its arguments to a CPU kernel: one block of 8-byte slots.

The launch entry takes one pointer. Slots 0-2 hold the cube count along x, y, z (``u32``);
then each parameter in signature order: an array takes two slots (its address, its length in
elements), a scalar one (its value in the low bytes, little-endian). The generated C reads the
block with these offsets and the launcher packs it with :func:`arg_struct`, so both sides come
from this module.
"""

from __future__ import annotations

import struct

from cubejit.ir.nodes import Param
from cubejit.ir.types import ArrayType, Scalar

SLOT_BYTES = 8
COUNT_SLOTS = 3

_SCALAR_FORMATS = {
    "bool": "?7x",
    "i8": "b7x",
    "i16": "h6x",
    "u8": "B7x",
    "u16": "H6x",
    "i32": "i4x",
    "u32": "I4x",
    "i64": "q",
    "u64": "Q",
    "f16": "e6x",
    "f32": "f4x",
    "f64": "d",
}


def slots(params: tuple[Param, ...]) -> list[int]:
    """The first slot of each parameter."""
    first = []
    slot = COUNT_SLOTS
    for p in params:
        first.append(slot)
        slot += 2 if isinstance(p.type, ArrayType) else 1
    return first


def scalar_format(t: Scalar) -> str:
    """The ``struct`` format of one scalar slot."""
    return _SCALAR_FORMATS[t.name]


def arg_struct(params: tuple[Param, ...]) -> struct.Struct:
    """Packs ``(count_x, count_y, count_z, *per-parameter values)``: an array contributes
    its address and length, a scalar its value."""
    parts = ["<", "I4x" * COUNT_SLOTS]
    for p in params:
        parts.append("QQ" if isinstance(p.type, ArrayType) else scalar_format(p.type))
    return struct.Struct("".join(parts))


def describe(params: tuple[Param, ...]) -> list[list[str]]:
    """A JSON-able description of the layout: ``[name, "array" | "scalar", type]`` each."""
    return [
        [p.name, "array", p.type.elem.name]
        if isinstance(p.type, ArrayType)
        else [p.name, "scalar", p.type.name]
        for p in params
    ]
