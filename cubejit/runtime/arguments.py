"""The one argument checker of every backend: which launch arguments fit which slots, and the
words of every :class:`~cubejit.errors.LaunchError` a launch raises.

A backend's launch takes its fast path on the arguments it knows (its own buffers, numpy arrays on
the CPU) and hands anything else to :class:`ArgumentChecker`: another library's array is first
described as a :class:`BufferView` (by the backend, which knows where memory lives), then checked
here, so that one mistake reads the same on every backend. Every message starts with the kernel
and the argument: ``kernel k: argument 'x' (Array[f32]) ...``.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from cubejit.errors import LaunchError
from cubejit.ir.types import name_of
from cubejit.runtime.layout import SCALAR_FORMATS, U32_MAX, ParamSlot, SlotKind


@dataclass(frozen=True, slots=True)
class BufferView:
    """What a launch learns of a buffer argument, whoever made it."""

    address: int
    """The address of its first element (0 for an empty one)."""
    dtype: str
    """Its element type as numpy names it (``"float32"``; ``"bfloat16"`` from DLPack)."""
    itemsize: int
    """Bytes per element."""
    shape: tuple[int, ...]
    """Elements along each dimension."""
    strides: tuple[int, ...] | None
    """Bytes between neighbours along each dimension; ``None`` when C-contiguous."""
    writeable: bool = True
    """Whether the kernel may store into it."""

    @classmethod
    def of_numpy(cls, array: np.ndarray) -> BufferView:
        """The view of a numpy array (a subclass such as ``np.memmap`` too)."""
        return cls(
            array.__array_interface__["data"][0],
            name_of(array.dtype),
            array.dtype.itemsize,
            array.shape,
            array.strides,
            bool(array.flags.writeable),
        )

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def element_strides(self) -> tuple[int, ...] | None:
        """The strides in elements; ``None`` when one is not a whole number of elements."""
        strides = self.strides if self.strides is not None else c_strides(self.shape, 1)
        if self.strides is None:
            return strides
        if any(s % self.itemsize for s in strides):
            return None
        return tuple(s // self.itemsize for s in strides)

    def is_c_contiguous(self) -> bool:
        if self.strides is None or self.size <= 1:
            return True
        expected = c_strides(self.shape, self.itemsize)
        return all(
            extent == 1 or s == e
            for extent, s, e in zip(self.shape, self.strides, expected, strict=True)
        )


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The strides of a C-contiguous array of ``shape``, in units of ``itemsize``."""
    strides = []
    step = itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


@dataclass(frozen=True, slots=True)
class TensorValues:
    """What a launch passes for a tensor: its address, shape and strides (elements), and
    whether its innermost dimension is contiguous."""

    address: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    contiguous: bool

    def words(self) -> tuple[int, ...]:
        """Rank, shape and strides, in the order of the tensor slot."""
        return (len(self.shape), *self.shape, *self.strides)


def tensor_values(address: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> TensorValues:
    """The values of a tensor whose strides are already checked."""
    return TensorValues(address, shape, strides, shape[-1] == 1 or strides[-1] == 1)


class ArgumentChecker:
    """Checks the arguments of one kernel against its slots; every refusal a LaunchError."""

    def __init__(self, kernel: str, slots: tuple[ParamSlot, ...]) -> None:
        self.kernel = kernel
        self.slots = slots
        self._where: list[str | None] = [None] * len(slots)

    def where(self, index: int) -> str:
        """Which argument ``index`` is, as messages name it; made at its first need and kept (a
        launch with another library's arrays names each where it orders the client's stream
        after its producer, every time), so that a kernel's first launch makes none."""
        found = self._where[index]
        if found is None:
            slot = self.slots[index]
            found = self._where[index] = (
                f"kernel {self.kernel}: argument {slot.name!r} ({slot.describe()})"
            )
        return found

    def refuse(self, index: int, why: str) -> LaunchError:
        """The error for argument ``index``, ``why`` saying what is wrong with it."""
        return LaunchError(f"{self.where(index)} {why}")

    def count_error(self, args: tuple[Any, ...]) -> LaunchError:
        names = ", ".join(s.name for s in self.slots)
        return LaunchError(
            f"kernel {self.kernel} takes {len(self.slots)} arguments ({names}), got {len(args)}"
        )

    def scalar_error(self, args: tuple[Any, ...]) -> LaunchError:
        """The error for the first scalar argument of ``args`` its slot cannot hold."""
        if len(args) != len(self.slots):
            return self.count_error(args)
        for index, (slot, arg) in enumerate(zip(self.slots, args, strict=True)):
            if slot.kind is SlotKind.SCALAR and not scalar_fits(slot, arg):
                return self.refuse(index, f"cannot hold {describe(arg)}")
        return LaunchError(f"kernel {self.kernel}: the arguments do not fit its signature")

    def not_a_buffer(self, index: int, arg: Any) -> LaunchError:
        """The error for an argument that is no buffer this backend can take."""
        noun = "a tensor" if self.slots[index].is_tensor else "an array"
        return self.refuse(index, f"must be {noun}, got {describe(arg)}")

    def other_client(self, index: int) -> LaunchError:
        return self.refuse(
            index,
            "is a buffer of another client: copy it to this one with "
            "client.to_device(other.read(buffer))",
        )

    def host_memory(self, index: int) -> LaunchError:
        return self.refuse(
            index, "is a numpy array, in host memory: copy it to the device with client.to_device"
        )

    def device_memory(self, index: int, where: str) -> LaunchError:
        return self.refuse(index, f"lives in {where} memory, which this client cannot reach")

    def array(self, index: int, view: BufferView) -> tuple[int, int]:
        """The address and length an array slot passes for ``view``, once it fits."""
        self.common(index, view)
        if not view.is_c_contiguous():
            raise self.refuse(
                index,
                "is not contiguous; pass a contiguous copy (np.ascontiguousarray), or "
                "annotate the parameter cj.Tensor[...] to take strided views",
            )
        return view.address, view.size

    def tensor(self, index: int, view: BufferView) -> TensorValues:
        """The values a tensor slot passes for ``view``, once it fits."""
        self.common(index, view)
        slot = self.slots[index]
        if len(view.shape) != slot.rank:
            raise self.refuse(
                index,
                f"has {len(view.shape)} dimension(s); this specialisation takes rank {slot.rank}",
            )
        strides = view.element_strides()
        if strides is None:
            raise self.refuse(index, "has a stride that is not a whole number of elements")
        for d, s in enumerate(strides):
            if s < 0:
                raise self.refuse(
                    index,
                    f"has a negative stride ({s} elements along dimension {d}); pass a copy "
                    f"(np.ascontiguousarray) or index it reversed in the kernel",
                )
        if view.size and sum((e - 1) * s for e, s in zip(view.shape, strides, strict=True)) > (
            U32_MAX
        ):
            raise self.refuse(
                index,
                f"spans more than {U32_MAX} elements from its first to its last; kernels "
                f"index with u32 offsets",
            )
        if any(s > U32_MAX for s in strides):
            raise self.refuse(index, f"has a stride beyond {U32_MAX} elements")
        return tensor_values(view.address, view.shape, strides)

    def common(self, index: int, view: BufferView) -> None:
        """The checks arrays and tensors share: element type, size, writeability, alignment."""
        slot = self.slots[index]
        if not matches(slot, view.dtype):
            raise self.refuse(index, f"holds {view.dtype} elements")
        if view.size > U32_MAX:
            raise self.refuse(
                index,
                f"has {view.size} elements; at most {U32_MAX} fit a u32 length "
                f"(split the work over several launches)",
            )
        if slot.written and not view.writeable:
            raise self.refuse(
                index, "is read-only, and the kernel writes it; pass a writeable array"
            )
        if view.address % view.itemsize:
            raise self.refuse(index, f"is not aligned to its element size ({view.itemsize} bytes)")


def matches(slot: ParamSlot, dtype: str) -> bool:
    """Whether a buffer of numpy ``dtype`` holds ``slot``'s elements (bf16 as 16-bit words
    too)."""
    if slot.scalar.name == "bf16":
        return dtype in ("uint16", "bfloat16")
    return dtype == slot.scalar.numpy_name


def scalar_fits(slot: ParamSlot, value: Any) -> bool:
    """Whether ``value`` converts to ``slot``'s scalar: a bool for bool, an integer (not a bool)
    in range for integers, a real number for floats."""
    t = slot.scalar
    if t.name == "bool":
        return isinstance(value, bool | np.bool_)
    if isinstance(value, bool | np.bool_):
        return False
    if t.name == "bf16":
        return isinstance(value, int | float | np.integer | np.floating)
    try:
        struct.pack("<" + SCALAR_FORMATS[t.name], value)
    except (struct.error, OverflowError, TypeError, ValueError):
        return False
    return True


def describe(value: Any) -> str:
    """An argument as messages name it."""
    if isinstance(value, np.ndarray):
        return f"a numpy array of {value.dtype}"
    return f"{type(value).__name__} {value!r}"[:80]
