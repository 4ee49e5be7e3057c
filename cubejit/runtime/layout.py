"""The one parameter layout every backend launches with: a scalar, an array or a tensor slot.

A kernel's parameters become, in signature order, :class:`ParamSlot` values: a scalar passes its
value; an array its address and its length (elements, ``u32``); a tensor its address, its rank,
its shape and its strides (elements; ``u32`` each). A backend decides only how the values are
packed (the CPU into one block of 8-byte words, CUDA into one 8-byte slot per kernel
parameter); what the slots are, and which arguments fit them
(:mod:`cubejit.runtime.arguments`), is the same everywhere.

A tensor's rank is part of the kernel, its shape and strides are launch values: a new shape of the
same rank compiles nothing. Whether a tensor's innermost dimension is contiguous (stride 1, or
extent 1) is a launch-time variant of the artifact, :func:`contiguity`: the contiguous form
indexes that dimension without a multiply, so the C compiler vectorises along it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from cubejit.ir.nodes import KernelIR, Param
from cubejit.ir.traits import block_traits
from cubejit.ir.types import ArrayType, Scalar, TensorType
from cubejit.ir.values import declared

U32_MAX = 2**32 - 1
"""The most elements a buffer may hold, and the farthest element a tensor may reach: lengths,
shapes, strides and offsets are ``u32`` in kernels, so a launch refuses anything larger rather
than let an index wrap."""

SCALAR_FORMATS = {
    "bool": "?",
    "i8": "b",
    "i16": "h",
    "i32": "i",
    "i64": "q",
    "u8": "B",
    "u16": "H",
    "u32": "I",
    "u64": "Q",
    "f16": "e",
    "bf16": "H",
    "f32": "f",
    "f64": "d",
}
"""The ``struct`` format of each scalar's value (bf16 as its 16 bits)."""


class SlotKind(enum.Enum):
    """How a parameter is passed."""

    SCALAR = "scalar"
    ARRAY = "array"
    TENSOR = "tensor"


@dataclass(frozen=True, slots=True)
class ParamSlot:
    """One kernel parameter as a launch passes it."""

    name: str
    """The parameter's name in the kernel's signature (for messages)."""
    scalar: Scalar
    """The scalar's type, or the buffer's element type."""
    kind: SlotKind
    """Scalar, array or tensor."""
    rank: int = 0
    """A tensor's rank (at least 1); 0 for the other kinds."""
    written: bool = False
    """Whether the kernel stores into it (a buffer): its argument must be writeable."""

    @property
    def is_array(self) -> bool:
        return self.kind is SlotKind.ARRAY

    @property
    def is_tensor(self) -> bool:
        return self.kind is SlotKind.TENSOR

    @property
    def is_buffer(self) -> bool:
        return self.kind is not SlotKind.SCALAR

    @property
    def words(self) -> int:
        """How many values the launch passes for it: 1, 2 (address, length), or a tensor's
        address, rank, shape and strides."""
        if self.kind is SlotKind.SCALAR:
            return 1
        return 2 if self.kind is SlotKind.ARRAY else 2 + 2 * self.rank

    def describe(self) -> str:
        """The type as the kernel language spells it."""
        if self.kind is SlotKind.ARRAY:
            return f"Array[{self.scalar.name}]"
        if self.kind is SlotKind.TENSOR:
            return f"Tensor[{self.scalar.name}, {self.rank}]"
        return self.scalar.name


def written_buffers(kernel: KernelIR) -> frozenset[str]:
    """The array and tensor parameters ``kernel`` stores into, as its traits say."""
    return frozenset(a.buffer for a in block_traits(kernel.body, declared(kernel)).writes)


def param_slots(
    params: Iterable[Param], written: frozenset[str] = frozenset()
) -> tuple[ParamSlot, ...]:
    """The launch layout of ``params`` (in signature order, each tensor with its rank); the
    buffers named in ``written`` are those the kernel stores into."""
    slots = []
    for p in params:
        t = p.type
        if isinstance(t, ArrayType):
            slots.append(ParamSlot(p.name, t.elem, SlotKind.ARRAY, 0, p.name in written))
        elif isinstance(t, TensorType):
            if t.rank is None:
                raise ValueError(f"tensor parameter {p.name} has no rank yet")
            slots.append(ParamSlot(p.name, t.elem, SlotKind.TENSOR, t.rank, p.name in written))
        else:
            slots.append(ParamSlot(p.name, t, SlotKind.SCALAR))
    return tuple(slots)


def kernel_slots(kernel: KernelIR) -> tuple[ParamSlot, ...]:
    """The launch layout of ``kernel``'s parameters."""
    return param_slots(kernel.params, written_buffers(kernel))


def contiguity(kernel: KernelIR, mask: int) -> frozenset[str]:
    """The tensors of ``kernel`` whose innermost dimension the variant ``mask`` says is
    contiguous: bit ``k`` stands for the ``k``-th tensor parameter."""
    tensors = kernel.tensors()
    if mask < 0 or mask >> len(tensors):
        raise ValueError(f"contiguity mask {mask} for {len(tensors)} tensor(s)")
    return frozenset(p.name for k, p in enumerate(tensors) if mask >> k & 1)


def all_contiguous(params: Iterable[Param]) -> int:
    """The contiguity mask of launches whose every tensor is contiguous innermost (the form a
    kernel is prepared in ahead of its launches)."""
    count = sum(1 for p in params if isinstance(p.type, TensorType))
    return (1 << count) - 1
