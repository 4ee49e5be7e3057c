"""Turns a launch's Python arguments into the argument block of a CPU kernel, fast.

One :class:`ArgBinder` per kernel spec holds a precompiled ``struct.Struct`` of the layout
(:mod:`cubejit.backends.cpu.layout`; built once for all the specs of one kernel's parameters);
a launch checks each argument against its slot, packs
addresses, lengths, shapes, strides and scalars into one ``bytes`` and computes the variant
(alignment, and for tensors which are contiguous innermost), in a few microseconds. The common
arguments (this client's buffers, numpy arrays of the right type) take a fast branch; anything
else, and every refusal, goes through the shared
:class:`~cubejit.runtime.arguments.ArgumentChecker`, so a mistake reads as it does on CUDA. Any
refusal is a :class:`~cubejit.errors.LaunchError` raised before the kernel runs.
"""

from __future__ import annotations

import ctypes
import math
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cubejit.backends.cpu.layout import arg_struct, make_variant
from cubejit.compile.id import ArtifactId
from cubejit.errors import LaunchError
from cubejit.ir.nodes import Param
from cubejit.runtime.arguments import ArgumentChecker, BufferView, TensorValues, tensor_values
from cubejit.runtime.layout import U32_MAX, ParamSlot, SlotKind, param_slots

MAX_ALIGN = 64
"""The largest alignment variant: a cache line, and the widest vector a CPU loads."""

MAX_UNITS = 2**32 - 1
"""The most units one launch runs: every position, ``ABSOLUTE_POS`` included, is a ``u32``."""

_DATA_OFFSET = 16
_read_word = ctypes.c_size_t.from_address


def _data_by_layout(array: np.ndarray) -> int:
    """The data address from the ndarray object itself (its ``data`` field follows the object
    header); ten times cheaper than ``__array_interface__``."""
    return _read_word(id(array) + _DATA_OFFSET).value


def _data_by_interface(array: np.ndarray) -> int:
    return array.ctypes.data


def _pick_address_reader() -> Any:
    probe = np.arange(3, dtype=np.int64)[1:]
    try:
        if _data_by_layout(probe) == probe.ctypes.data:
            return _data_by_layout
    except (ValueError, OSError):
        pass
    return _data_by_interface


numpy_address = _pick_address_reader()
"""The address of a numpy array's first element."""


class CpuBuffer:
    """A buffer of a CPU client: a 64-byte aligned, C-contiguous numpy array that knows its
    address. Its shape is the one it was made with; an array parameter sees its elements in
    C order."""

    __slots__ = ("address", "array", "client", "dtype", "ndim", "shape", "size")

    def __init__(self, array: np.ndarray, client: Any) -> None:
        self.array = array
        """The elements (the client's memory), in the buffer's shape."""
        self.address: int = array.ctypes.data
        self.size: int = array.size
        self.shape: tuple[int, ...] = array.shape
        self.ndim: int = array.ndim
        self.dtype: np.dtype = array.dtype
        self.client = client

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.shape))
        return f"CpuBuffer({shape} x {self.dtype})"


_SCALAR, _ARRAY, _TENSOR = SlotKind.SCALAR, SlotKind.ARRAY, SlotKind.TENSOR


@dataclass(frozen=True, slots=True)
class _Plan:
    """What binding the arguments of a kernel's parameters needs, the same for every spec of
    one kernel and layout (its specs differ in comptime values and cube_dim): built once."""

    slots: tuple[ParamSlot, ...]
    checker: ArgumentChecker
    pack: Callable[..., bytes]
    steps: tuple[tuple[SlotKind, np.dtype | None, int], ...]
    tensors: int
    widest: int

    @staticmethod
    def of(name: str, params: tuple[Param, ...]) -> _Plan:
        plan = _plans.get((name, params))
        if plan is None:
            slots = param_slots(params)
            plan = _plans[(name, params)] = _Plan(
                slots,
                ArgumentChecker(name, slots),
                arg_struct(slots).pack,
                tuple(
                    (s.kind, np.dtype(s.scalar.dtype.name) if s.is_buffer else None, s.rank)
                    for s in slots
                ),
                sum(1 for s in slots if s.is_tensor),
                max((s.scalar.itemsize for s in slots if s.is_buffer), default=1),
            )
        return plan


_plans: dict[tuple[str, tuple[Param, ...]], _Plan] = {}


class ArgBinder:
    """Checks and packs the arguments of one kernel spec."""

    def __init__(self, spec: Any, client: Any) -> None:
        self.spec = spec
        self.name: str = spec.name
        self.client = client
        plan = _Plan.of(spec.name, spec.params)
        self.slots = plan.slots
        self.checker = plan.checker
        self.pack = plan.pack
        self.plan = plan.steps
        self.tensors = plan.tensors
        self.widest = plan.widest
        self.units_per_cube: int = math.prod(spec.cube_dim)
        self.artifact_ids: dict[Any, ArtifactId[Any]] = {}
        """The artifact id of each variant seen, built once."""
        self.written: tuple[int, ...] | None = None
        """The positions of the buffers the kernel stores into, known once an artifact of it
        is loaded (every variant stores into the same ones), and checked before any load
        after that."""

    def artifact_id(self, variant: Any) -> ArtifactId[Any]:
        aid = self.artifact_ids.get(variant)
        if aid is None:
            aid = self.artifact_ids[variant] = ArtifactId(self.spec.id(), variant)
        return aid

    def bind(self, counts: tuple[int, int, int], args: tuple[Any, ...]) -> tuple[bytes, Any]:
        """The packed argument block and the variant of ``args``."""
        if len(args) != len(self.plan):
            raise self.checker.count_error(args)
        if counts[0] * counts[1] * counts[2] * self.units_per_cube > MAX_UNITS:
            raise LaunchError(
                f"kernel {self.name}: cube_count {counts} of {self.units_per_cube} units each "
                f"makes more than {MAX_UNITS} units, beyond what a u32 position can number"
            )
        values: list[Any] = [*counts]
        low = MAX_ALIGN
        mask = bit = 0
        client = self.client
        for j, (kind, dtype, rank) in enumerate(self.plan):
            arg = args[j]
            if kind is _SCALAR:
                values.append(arg)
                continue
            t = type(arg)
            if kind is _ARRAY:
                if t is np.ndarray and arg.dtype is dtype and arg.flags.c_contiguous:
                    address, n = numpy_address(arg), arg.size
                    if n > U32_MAX:
                        address, n = self.checker.array(j, self.view(j, arg))
                elif t is CpuBuffer and arg.client is client and arg.dtype == dtype:
                    address, n = arg.address, arg.size
                else:
                    address, n = self.checker.array(j, self.view(j, arg))
                low |= address
                values.append(address)
                values.append(n)
                continue
            if t is CpuBuffer and arg.client is client:
                arg = arg.array
            if type(arg) is np.ndarray and arg.dtype == dtype and arg.ndim == rank:
                tensor = self.numpy_tensor(j, arg)
            else:
                tensor = self.checker.tensor(j, self.view(j, arg))
            low |= tensor.address
            values.append(tensor.address)
            values.extend(tensor.words())
            mask |= tensor.contiguous << bit
            bit += 1
        align = low & -low
        if align < self.widest:
            self.check_alignment(args)
        try:
            packed = self.pack(*values)
        except (struct.error, OverflowError, TypeError, ValueError):
            raise self.checker.scalar_error(args) from None
        return packed, make_variant(align, mask, self.tensors)

    def numpy_tensor(self, index: int, array: np.ndarray) -> TensorValues:
        """A numpy array of the right type and rank as a tensor: plain strides (non-negative,
        whole elements, within reach) are taken here, anything else goes to the checker."""
        item = array.itemsize
        strides = array.strides
        elems = tuple(s // item for s in strides)
        if array.size <= U32_MAX and all(
            0 <= e <= U32_MAX and e * item == s for e, s in zip(elems, strides, strict=True)
        ):
            shape = array.shape
            if not array.size or sum((d - 1) * e for d, e in zip(shape, elems, strict=True)) <= (
                U32_MAX
            ):
                return tensor_values(numpy_address(array), shape, elems)
        return self.checker.tensor(index, BufferView.of_numpy(array))

    def view(self, index: int, arg: Any) -> BufferView:
        """``arg`` as a buffer this client can read, or the LaunchError saying why not."""
        if isinstance(arg, CpuBuffer):
            if arg.client is not self.client:
                raise self.checker.other_client(index)
            return BufferView.of_numpy(arg.array)
        if isinstance(arg, np.ndarray):
            return BufferView.of_numpy(arg)
        if hasattr(arg, "__cuda_array_interface__"):
            raise self.checker.device_memory(index, "CUDA device")
        raise self.checker.not_a_buffer(index, arg)

    def check_written(self, args: tuple[Any, ...], written: Iterable[int]) -> None:
        """Refuses a read-only array among ``args`` at the positions ``written`` (the buffers
        the kernel stores into); this client's buffers are always writeable."""
        for j in written:
            arg = args[j]
            if type(arg) is not CpuBuffer and not arg.flags.writeable:
                raise self.checker.refuse(
                    j, "is read-only, and the kernel writes it; pass a writeable array"
                )

    def check_alignment(self, args: tuple[Any, ...]) -> None:
        for j, (slot, arg) in enumerate(zip(self.slots, args, strict=True)):
            if not slot.is_buffer:
                continue
            array = arg.array if isinstance(arg, CpuBuffer) else arg
            if numpy_address(array) % slot.scalar.itemsize:
                raise self.checker.refuse(
                    j, f"is not aligned to its element size ({slot.scalar.itemsize} bytes)"
                )
