"""How a launch hands its arguments to a CPU kernel: one block of 8-byte words.

The launch entry takes one pointer. Words 0-2 hold the cube count along x, y, z (``u32``); then
each parameter's values (:class:`~cubejit.runtime.layout.ParamSlot`) in signature order: a
scalar one word (its value in the low bytes, little-endian), an array two (its address, its
length in elements), a tensor ``2 + 2 * rank`` (its address, its rank, its shape, its strides in
elements). The generated C reads the block with these offsets and the launcher packs it with
:func:`arg_struct`, so both sides come from this module.

A CPU artifact's variant is the alignment (bytes) every buffer's address is a multiple of; for
a kernel with tensors it is ``(alignment, contiguity mask)``
(:func:`~cubejit.runtime.layout.contiguity`), so a kernel without tensors keeps the ids it has
always had.
"""

from __future__ import annotations

import struct
from typing import Any

from cubejit.ir.types import Scalar
from cubejit.runtime.layout import SCALAR_FORMATS, ParamSlot, SlotKind

SLOT_BYTES = 8
COUNT_SLOTS = 3

ALIGNMENTS = (1, 2, 4, 8, 16, 32, 64)
"""The alignment variants a CPU artifact may be built for, in bytes."""


def slots(params: tuple[ParamSlot, ...]) -> list[int]:
    """The first word of each parameter."""
    first = []
    word = COUNT_SLOTS
    for p in params:
        first.append(word)
        word += p.words
    return first


def scalar_format(t: Scalar) -> str:
    """The ``struct`` format of one scalar word."""
    code = SCALAR_FORMATS[t.name]
    return code + f"{SLOT_BYTES - struct.calcsize(code)}x"


def arg_struct(params: tuple[ParamSlot, ...]) -> struct.Struct:
    """Packs ``(count_x, count_y, count_z, *per-parameter values)``: an array contributes its
    address and length, a tensor its address, rank, shape and strides, a scalar its value."""
    parts = ["<", "I4x" * COUNT_SLOTS]
    for p in params:
        parts.append("Q" * p.words if p.kind is not SlotKind.SCALAR else scalar_format(p.scalar))
    return struct.Struct("".join(parts))


def variant_parts(variant: Any, tensors: int) -> tuple[int, int]:
    """``(alignment, contiguity mask)`` of a CPU variant for a kernel of ``tensors`` tensor
    parameters; ``ValueError`` when it is not one."""
    if tensors:
        if not (isinstance(variant, tuple) and len(variant) == 2):
            raise ValueError(f"variant {variant!r} is not (alignment, contiguity mask)")
        align, mask = variant
    else:
        align, mask = variant, 0
    if align not in ALIGNMENTS or not isinstance(mask, int) or not 0 <= mask < 1 << tensors:
        raise ValueError(f"variant {variant!r} is not one of alignments {ALIGNMENTS}")
    return align, mask


def make_variant(align: int, mask: int, tensors: int) -> Any:
    """The variant of a launch at ``align`` with contiguity ``mask``."""
    return (align, mask) if tensors else align
