"""Device memory as a launch sees it: cubejit's own buffers, and anyone else's through
``__cuda_array_interface__`` (CuPy arrays, PyTorch CUDA tensors), taken without a copy.

An array reaches a kernel as a device pointer and a ``u32`` element count, whoever owns it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cubejit.ir.types import Scalar, bf16, from_dtype

U32_MAX = 2**32 - 1

LEGACY_DEFAULT_STREAM = 1
"""The value ``__cuda_array_interface__`` gives for the legacy default stream, which a
blocking stream such as a client's is already ordered after."""


class CudaBuffer:
    """``n`` elements of ``scalar`` in one client's device memory, freed with the buffer.

    Exposes ``__cuda_array_interface__``, so CuPy and PyTorch take it without a copy.
    """

    __slots__ = ("__weakref__", "_free", "client", "n", "ptr", "scalar")

    def __init__(self, client: Any, ptr: int, n: int, scalar: Scalar, free: Any) -> None:
        self.client = client
        """The client whose context owns the memory."""
        self.ptr = ptr
        """The device address (0 for an empty buffer)."""
        self.n = n
        """The number of elements."""
        self.scalar = scalar
        """The element type."""
        self._free = free

    @property
    def nbytes(self) -> int:
        return self.n * self.scalar.itemsize

    def __len__(self) -> int:
        return self.n

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": (self.n,),
            "typestr": self.scalar.dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
            "stream": self.client.stream_handle,
        }

    def __repr__(self) -> str:
        return f"CudaBuffer({self.n} x {self.scalar.name} at {self.ptr:#x})"

    def __del__(self) -> None:
        free, self._free = self._free, None
        if free is not None and self.ptr:
            try:
                free(self.ptr)
            except Exception:
                pass


@dataclass(frozen=True, slots=True)
class ForeignArray:
    """What ``__cuda_array_interface__`` says of another library's device array."""

    ptr: int
    n: int
    dtype: np.dtype
    stream: int | None
    """The stream its producer's work is on, ``None`` when it promises none is pending."""

    def matches(self, scalar: Scalar) -> bool:
        """Whether its elements are ``scalar``s (bf16 is held as 16-bit words)."""
        if scalar == bf16:
            return self.dtype == np.dtype(np.uint16) or self.dtype.name == "bfloat16"
        return from_dtype(self.dtype) == scalar


def foreign_array(value: Any) -> ForeignArray | None:
    """``value``'s device array, if it has a C-contiguous ``__cuda_array_interface__``;
    ``None`` if it has no such interface. Raises ``ValueError`` for one that is strided."""
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is None:
        return None
    shape = tuple(interface["shape"])
    dtype = np.dtype(interface["typestr"])
    strides = interface.get("strides")
    if strides is not None:
        expected = []
        step = dtype.itemsize
        for extent in reversed(shape):
            expected.append(step)
            step *= extent
        if tuple(reversed(expected)) != tuple(strides) and math.prod(shape) > 1:
            raise ValueError("it is not contiguous; pass a contiguous copy")
    ptr, _ = interface["data"]
    return ForeignArray(int(ptr or 0), math.prod(shape), dtype, interface.get("stream"))
