"""What each name of a kernel is: a value's *kind*, its *item* and, for a buffer, its memory space.

After CubeCL's ``Variable { kind, item }``: a pass asks a name's :class:`Value` what it is
(a parameter buffer in global memory, a local scalar, ...) instead of guessing from the name or
from which list declared it. Expressions name values (``Var``, ``Load``, ``Store``, ``Length``
by name); :func:`declared` maps every name a kernel declares to its value.

The item is the element type times a line width: a ``cj.Line[T]`` buffer's lines have the width
its launch chose (the IR itself reads and writes them lane by lane).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import assert_never

from cubejit.ir.nodes import BufferKind, KernelIR
from cubejit.ir.types import ArrayType, Scalar, TensorType


class MemorySpace(enum.Enum):
    """Where a buffer lives, and so who sees its writes."""

    GLOBAL = "global"
    """Device memory, seen by every unit of the launch (parameter arrays and tensors)."""
    SHARED = "shared"
    """One buffer per cube, seen by the cube's units."""
    LOCAL = "local"
    """One buffer per unit, seen by that unit alone."""


class ValueKind(enum.Enum):
    """What a named value is."""

    GLOBAL_BUFFER = "global buffer"
    """A parameter array or tensor: a buffer in global memory, read and written by element."""
    SHARED_BUFFER = "shared buffer"
    """A cube's shared-memory buffer."""
    LOCAL_ARRAY = "local array"
    """A unit's own array."""
    SCALAR_PARAM = "scalar parameter"
    """A launch argument passed by value; each unit holds its own copy, which it may assign."""
    LOCAL_SCALAR = "local scalar"
    """A unit's local variable."""

    @property
    def is_buffer(self) -> bool:
        """Whether values of this kind are indexed (``x[i]``) rather than read whole."""
        return self in _BUFFERS


_BUFFERS = frozenset((ValueKind.GLOBAL_BUFFER, ValueKind.SHARED_BUFFER, ValueKind.LOCAL_ARRAY))


@dataclass(frozen=True, slots=True)
class Item:
    """What one element of a value is: ``elem`` times ``width`` lanes."""

    elem: Scalar
    """The element type of each lane."""
    width: int = 1
    """Lanes per element; 1 for a plain scalar."""

    def __str__(self) -> str:
        return self.elem.name if self.width == 1 else f"Line[{self.elem.name}, {self.width}]"


@dataclass(frozen=True, slots=True)
class Value:
    """A name a kernel declares, as passes see it."""

    name: str
    kind: ValueKind
    item: Item
    """A scalar's type, or a buffer's element."""
    space: MemorySpace | None
    """A buffer's memory space; None for scalars."""
    rank: int = 0
    """Dimensions of a buffer (1 for an array); 0 for scalars."""
    atomic: bool = False
    """Whether a buffer's elements are atomics (``cj.Atomic[T]``)."""


def declared(kernel: KernelIR) -> Mapping[str, Value]:
    """Every parameter and local of ``kernel`` by name (comptime parameters are folded away
    and have none)."""
    values: dict[str, Value] = {}
    for param in kernel.params:
        t = param.type
        if isinstance(t, Scalar):
            values[param.name] = Value(param.name, ValueKind.SCALAR_PARAM, Item(t), None)
        elif isinstance(t, ArrayType):
            values[param.name] = Value(
                param.name, ValueKind.GLOBAL_BUFFER, Item(t.elem), MemorySpace.GLOBAL, 1, t.atomic
            )
        elif isinstance(t, TensorType):
            values[param.name] = Value(
                param.name,
                ValueKind.GLOBAL_BUFFER,
                Item(t.elem, t.line or 1),
                MemorySpace.GLOBAL,
                t.rank or 1,
                t.atomic,
            )
        else:
            assert_never(t)
    for local in kernel.locals:
        values[local.name] = Value(local.name, ValueKind.LOCAL_SCALAR, Item(local.type), None)
    for buffer in kernel.allocations:
        kind, space = _BUFFER_KINDS[buffer.kind]
        values[buffer.name] = Value(buffer.name, kind, Item(buffer.elem), space, 1, buffer.atomic)
    return values


_BUFFER_KINDS = {
    BufferKind.SHARED: (ValueKind.SHARED_BUFFER, MemorySpace.SHARED),
    BufferKind.LOCAL: (ValueKind.LOCAL_ARRAY, MemorySpace.LOCAL),
}
