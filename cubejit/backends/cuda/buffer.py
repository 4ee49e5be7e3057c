"""Device memory as a launch sees it: cubejit's own buffers, and anyone else's through
``__cuda_array_interface__`` (CuPy arrays, PyTorch CUDA tensors) or DLPack (``__dlpack__``),
taken without a copy.

An array reaches a kernel as a device pointer and a ``u32`` element count, a tensor as a pointer,
its rank, shape and strides, whoever owns it. Another library's array is described as a
:class:`~cubejit.runtime.arguments.BufferView` here and checked by the shared argument checker.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from cubejit.errors import LaunchError
from cubejit.ir.types import Scalar, bf16, from_typestr, name_of
from cubejit.runtime.arguments import BufferView, c_strides
from cubejit.runtime.layout import U32_MAX
from cubejit.runtime.lines import Layout

LEGACY_DEFAULT_STREAM = 1
"""The value ``__cuda_array_interface__`` gives for the legacy default stream, which a
blocking stream such as a client's is already ordered after."""


def dtype_name(scalar: Scalar) -> str:
    """How a buffer of ``scalar`` names its elements (numpy's names; ``bfloat16`` for bf16)."""
    return "bfloat16" if scalar == bf16 else scalar.numpy_name


class CudaBuffer:
    """``n`` elements of ``scalar`` in one client's device memory, freed with the buffer; a
    C-contiguous tensor of :attr:`shape`.

    Exposes ``__cuda_array_interface__``, so CuPy and PyTorch take it without a copy.
    """

    __slots__ = (
        "__weakref__",
        "_free",
        "client",
        "contiguous",
        "flat",
        "n",
        "ndim",
        "ptr",
        "scalar",
        "shape",
        "words",
    )

    def __init__(
        self,
        client: Any,
        ptr: int,
        n: int,
        scalar: Scalar,
        free: Any,
        shape: tuple[int, ...] | None = None,
    ) -> None:
        self.client = client
        """The client whose context owns the memory."""
        self.ptr = ptr
        """The device address (0 for an empty buffer)."""
        self.n = n
        """The number of elements."""
        self.scalar = scalar
        """The element type."""
        self.shape: tuple[int, ...] = (n,) if shape is None else shape
        """The extent along each dimension (fixed: a launch remembers it)."""
        self.ndim = len(self.shape)
        self.words: tuple[int, ...] = (self.ndim, *self.shape, *c_strides(self.shape, 1))
        """What a tensor slot passes after the pointer: rank, shape, strides (elements)."""
        self.flat = n
        """As a :class:`CudaView`'s: the element count of a C-contiguous one, which a buffer
        is (a launch takes buffers and views alike)."""
        self.contiguous = 1
        """As a :class:`CudaView`'s: stride 1 innermost."""
        self._free = free

    @property
    def nbytes(self) -> int:
        return self.n * self.scalar.itemsize

    @property
    def size(self) -> int:
        """The number of elements, as numpy, CuPy and a CPU client's buffers name it."""
        return self.n

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of the elements (``uint16`` storage for bf16), as a CPU client's
        buffers have it."""
        return self.scalar.dtype

    def __len__(self) -> int:
        return self.n

    def view(self) -> BufferView:
        """The buffer as the argument checker sees it."""
        return BufferView(
            self.ptr, dtype_name(self.scalar), self.scalar.itemsize, self.shape, None, True
        )

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.scalar.dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
            "stream": self.client.stream_handle,
        }

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.shape))
        return f"CudaBuffer({shape} x {self.scalar.name} at {self.ptr:#x})"

    def __del__(self) -> None:
        free, self._free = self._free, None
        if free is not None and self.ptr:
            try:
                free(self.ptr)
            except Exception:
                pass


class CudaView:
    """A strided view of device memory that a tensor slot takes as it is, without asking the
    array it came from again: made where the memory was already checked and ordered on the
    client's stream (:mod:`cubejit.std` makes one per operand of each call). Its maker checks
    that a view a kernel writes is writeable. Keeps ``owner`` alive; other libraries read it
    through ``__cuda_array_interface__``.

    Raises :class:`~cubejit.errors.LaunchError` at construction for a layout no tensor slot
    can take (a span or stride past ``u32``, an address not aligned to its elements)."""

    __slots__ = (
        "__weakref__",
        "client",
        "contiguous",
        "flat",
        "n",
        "ndim",
        "owner",
        "ptr",
        "scalar",
        "shape",
        "strides",
        "words",
        "writeable",
    )

    def __init__(
        self,
        client: Any,
        scalar: Scalar,
        ptr: int,
        shape: tuple[int, ...],
        strides: tuple[int, ...],
        owner: Any,
        writeable: bool = True,
    ) -> None:
        span = 1
        widest = 0
        for extent, step in zip(shape, strides, strict=True):
            if not extent:
                span = 0
                break
            span += (extent - 1) * step
            if step > widest or step < 0:
                widest = step if step > widest else U32_MAX + 1
        if span > U32_MAX or widest > U32_MAX or ptr % scalar.itemsize:
            raise LaunchError(
                f"a view of shape {shape}, strides {strides} (elements) at {ptr:#x} is no "
                f"tensor a kernel can take: strides must be 0 to {U32_MAX}, its span at most "
                f"{U32_MAX} elements, its address aligned to {scalar.itemsize} bytes"
            )
        self.client = client
        self.scalar = scalar
        self.ptr = ptr
        self.shape = shape
        self.strides = strides
        """In elements."""
        self.ndim = len(shape)
        self.n = span
        """The elements from the first to the last the view reaches (the overlap check's)."""
        self.words = (self.ndim, *shape, *strides)
        self.contiguous = 1 if not shape or shape[-1] == 1 or strides[-1] == 1 else 0
        flat, step = 1, 1
        for extent, stride in zip(reversed(shape), reversed(strides), strict=True):
            if extent != 1 and stride != step:
                flat = -1
                break
            flat *= extent
            step *= extent
        self.flat = flat
        """The element count when the view is C-contiguous (an array slot takes it so), else -1."""
        self.owner = owner
        self.writeable = writeable

    def moved(self, ptr: int, owner: Any) -> CudaView:
        """This view of the memory at ``ptr`` (aligned as this view's is, so the checks hold)
        kept alive by ``owner``."""
        view = CudaView.__new__(CudaView)
        view.client = self.client
        view.scalar = self.scalar
        view.ptr = ptr
        view.shape = self.shape
        view.strides = self.strides
        view.ndim = self.ndim
        view.n = self.n
        view.words = self.words
        view.contiguous = self.contiguous
        view.flat = self.flat
        view.owner = owner
        view.writeable = self.writeable
        return view

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        item = self.scalar.itemsize
        return {
            "shape": self.shape,
            "typestr": self.scalar.dtype.str,
            "data": (self.ptr, not self.writeable),
            "version": 3,
            "strides": tuple(s * item for s in self.strides),
            "stream": self.client.stream_handle,
        }

    def layout(self) -> Layout:
        """What the view's line size depends on (:func:`cubejit.runtime.lines.layout_of`)."""
        item = self.scalar.itemsize
        return Layout(self.ptr, self.shape, tuple(s * item for s in self.strides))

    def view(self) -> BufferView:
        """The view as the argument checker sees it."""
        item = self.scalar.itemsize
        return BufferView(
            self.ptr,
            dtype_name(self.scalar),
            item,
            self.shape,
            tuple(s * item for s in self.strides),
            self.writeable,
        )

    def __repr__(self) -> str:
        return f"CudaView({self.shape} x {self.scalar.name}, strides {self.strides})"


@dataclass(frozen=True, slots=True)
class DeviceArray:
    """Another library's device array: what it holds, and the stream its producer's work is on."""

    view: BufferView
    stream: int | None
    """``None`` when the producer promises no work is pending (or, for DLPack, has already
    ordered it before the client's stream)."""
    keep: Any = None
    """What must stay alive while the launch reads the view (a DLPack capsule)."""

    @property
    def ptr(self) -> int:
        return self.view.address


class UnusableArray(Exception):
    """An array interface that says nothing a launch can use; the message says why."""


def device_array(value: Any, stream: int | None) -> DeviceArray | None:
    """``value``'s device array, through ``__cuda_array_interface__`` or else DLPack (asked to
    order its producer's work before ``stream``); ``None`` if it has neither. Raises
    :class:`UnusableArray` for an interface that cannot be read, ``LookupError`` (with the
    device's name) for a DLPack array outside CUDA device memory."""
    if is_torch_tensor(value):
        found = _torch_array(value)
        if found is not None:
            return found
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        return _from_interface(interface)
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        return _from_dlpack(value, stream)
    return None


TORCH_TYPES: dict[type, bool] = {}
"""Whether each type of argument seen is PyTorch's tensor, whose device array is read from its
own methods (:func:`is_torch_tensor`)."""
_torch_dtypes: dict[Any, tuple[str, int]] = {}
"""The numpy name and item size of each PyTorch dtype seen, as its interface's typestr says."""


def is_torch_tensor(value: Any) -> bool:
    """Whether ``value`` is a PyTorch tensor, whose own methods (``data_ptr``, ``shape``,
    ``stride``) then say what its ``__cuda_array_interface__`` would: that interface is built in
    Python at each read, and cost a launch 2 to 4 µs a tensor. Known once per type, from the
    interface of a tensor of it on the device, which must name no stream (as PyTorch's does);
    false until one such tensor is seen."""
    kind = type(value)
    known = TORCH_TYPES.get(kind)
    if known is None:
        if kind.__module__.partition(".")[0] != "torch" or not hasattr(kind, "data_ptr"):
            known = False
        else:
            try:
                interface = value.__cuda_array_interface__
            except Exception:
                return False
            known = isinstance(interface, dict) and interface.get("stream") is None
        TORCH_TYPES[kind] = known
    return known


def _torch_array(value: Any) -> DeviceArray | None:
    """A PyTorch tensor's device array as its interface would give it, read from its methods;
    ``None`` where the interface is left to answer (a tensor on the host or needing its
    gradient, which it refuses, one of a dtype not yet seen through it, or a sparse one)."""
    try:
        if not value.is_cuda or value.requires_grad:
            return None
        described = _torch_dtypes.get(value.dtype)
        if described is None:
            dtype, _ = from_typestr(str(value.__cuda_array_interface__["typestr"]))
            described = _torch_dtypes[value.dtype] = name_of(dtype), dtype.itemsize
        name, itemsize = described
        strides = None if value.is_contiguous() else tuple(s * itemsize for s in value.stride())
        ptr = value.data_ptr() if value.numel() else 0
        shape = tuple(value.shape)
    except Exception:
        return None
    return DeviceArray(BufferView(ptr, name, itemsize, shape, strides, True), None)


def _from_interface(interface: Any) -> DeviceArray:
    try:
        shape = tuple(int(e) for e in interface["shape"])
        typestr = str(interface["typestr"])
        ptr, readonly = interface["data"]
        strides = interface.get("strides")
        stream = interface.get("stream")
    except (KeyError, TypeError, ValueError) as e:
        raise UnusableArray(f"its __cuda_array_interface__ is malformed ({e!r})") from None
    try:
        dtype, _ = from_typestr(typestr)
    except TypeError:
        raise UnusableArray(f"its __cuda_array_interface__ names no dtype ({typestr!r})") from None
    view = BufferView(
        int(ptr or 0),
        name_of(dtype),
        dtype.itemsize,
        shape,
        None if strides is None else tuple(int(s) for s in strides),
        not readonly,
    )
    return DeviceArray(view, None if stream is None else int(stream))


class _Device(ctypes.Structure):
    _fields_ = (("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32))


class _DataType(ctypes.Structure):
    _fields_ = (("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16))


class _DLTensor(ctypes.Structure):
    _fields_ = (
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    )


_DL_CUDA_DEVICES = {2: "CUDA device", 3: "pinned host", 13: "CUDA managed"}
_DL_DEVICE_NAMES = {1: "host", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 10: "ROCm"}
_DL_TYPES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 6: "bool"}
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = (ctypes.py_object, ctypes.c_char_p)


def _from_dlpack(value: Any, stream: int | None) -> DeviceArray:
    device_type, _ = value.__dlpack_device__()
    if int(device_type) not in (2, 13):
        name = _DL_CUDA_DEVICES.get(int(device_type)) or _DL_DEVICE_NAMES.get(
            int(device_type), f"DLPack device {device_type}"
        )
        raise LookupError(name)
    try:
        capsule = value.__dlpack__(stream=stream)
    except (TypeError, BufferError, RuntimeError, ValueError) as e:
        raise UnusableArray(f"its __dlpack__ refused ({e})") from None
    return DeviceArray(dlpack_view(capsule), None, capsule)


def dlpack_view(capsule: Any) -> BufferView:
    """The array a DLPack capsule (``"dltensor"``, not yet consumed) describes, left unconsumed:
    its producer still owns the memory and frees it when the capsule goes."""
    try:
        address = _capsule_pointer(capsule, b"dltensor")
    except ValueError:
        raise UnusableArray("its DLPack capsule is not an unconsumed dltensor") from None
    tensor = _DLTensor.from_address(address)
    kind = _DL_TYPES.get(tensor.dtype.code)
    if kind is None or tensor.dtype.lanes != 1 or tensor.dtype.bits % 8:
        raise UnusableArray(f"its DLPack element type (code {tensor.dtype.code}) is not a scalar")
    name = "bool" if kind == "bool" else f"{kind}{tensor.dtype.bits}"
    itemsize = tensor.dtype.bits // 8
    shape = tuple(tensor.shape[d] for d in range(tensor.ndim))
    strides = (
        None
        if not tensor.strides
        else tuple(tensor.strides[d] * itemsize for d in range(tensor.ndim))
    )
    data = (tensor.data or 0) + tensor.byte_offset
    return BufferView(data, name, itemsize, shape, strides, True)


def spans_of(view: BufferView) -> tuple[int, int]:
    """The first and one-past-the-last byte a view's elements occupy."""
    if not view.size:
        return view.address, view.address
    strides = view.strides if view.strides is not None else c_strides(view.shape, view.itemsize)
    low = sum((e - 1) * s for e, s in zip(view.shape, strides, strict=True) if s < 0)
    high = sum((e - 1) * s for e, s in zip(view.shape, strides, strict=True) if s > 0)
    return view.address + low, view.address + high + view.itemsize
