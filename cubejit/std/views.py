"""How the standard kernels see their arguments: one strided layout for every kind of array.

A standard kernel takes numpy arrays and CPU buffers (on the CPU), client buffers and anything
with ``__cuda_array_interface__`` (on CUDA), of any non-negative strides. :class:`Operand`
reads each into the same description (its client, element type, shape and strides in
elements) and hands kernels *views* of it: the same memory under another shape and strides,
without a copy. Kernels over rows see every operand as a rank-3 tensor ``(A, B, N)``: the
dimensions other than the one a kernel walks are folded, jointly for all operands, into at
most two (:func:`fold_rows`), so a transposed or sliced input is read in place.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

import cubejit as cj
from cubejit.errors import LaunchError
from cubejit.ir.types import Scalar, bf16, f32, f64, from_dtype, from_typestr
from cubejit.runtime.protocol import Client
from cubejit.std.replay import made_empty

FLOATS = ("f16", "bf16", "f32", "f64")
"""The element types the standard kernels compute on."""


@dataclass(slots=True)
class Operand:
    """An array argument of a standard kernel, as a strided layout over its memory."""

    client: Client
    scalar: Scalar
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    """In elements, one per dimension."""
    base: Any
    """What holds the memory: a numpy array on the CPU, a device address on CUDA."""
    owner: Any
    """What keeps the memory alive (the argument itself)."""
    writeable: bool = True

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def address(self) -> int:
        """The address of the first element, in bytes."""
        if isinstance(self.base, int):
            return self.base
        return int(self.base.__array_interface__["data"][0])

    def view(self, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
        """The memory under ``shape`` and ``strides`` (elements), as a launch takes it: a numpy
        view on the CPU, a :class:`~cubejit.backends.cuda.buffer.CudaView` on CUDA (which a
        launch reads without looking at the argument again)."""
        if self.client.backend == "cpu":
            item = self.base.itemsize
            return np.lib.stride_tricks.as_strided(
                self.base, shape, tuple(s * item for s in strides), writeable=True
            )
        from cubejit.backends.cuda.buffer import CudaView

        return CudaView(self.client, self.scalar, self.base, shape, strides, self.owner)


def operand(x: Any, client: Client | None = None, name: str = "x") -> Operand:
    """``x`` as an :class:`Operand` of ``client`` (inferred from ``x`` when ``None``).

    Raises :class:`~cubejit.errors.LaunchError` for something that is not an array of a client,
    or an array of another client than ``client``."""
    from cubejit.backends.cpu.launcher import CpuBuffer

    if isinstance(x, CpuBuffer):
        x = x.array
    if isinstance(x, np.ndarray):
        if client is None:
            client = cj.client("cpu")
        if client.backend != "cpu":
            raise LaunchError(f"{name} is a host array; on {client.backend} pass a device array")
        scalar = from_dtype(x.dtype)
        if scalar is None or any(s < 0 for s in x.strides):
            raise LaunchError(f"{name}: cubejit takes no array of {x.dtype} or negative strides")
        strides = tuple(s // x.itemsize for s in x.strides)
        base = x if x.size == 0 else _base_of(x)
        return Operand(client, scalar, tuple(x.shape), strides, base, x)
    return _device_operand(x, client, name)


def _base_of(x: np.ndarray) -> np.ndarray:
    """A one-dimensional array starting at ``x``'s first element, for ``as_strided`` views."""
    return np.lib.stride_tricks.as_strided(x, (1,), (x.itemsize,)).reshape(1)


def _device_operand(x: Any, client: Client | None, name: str) -> Operand:
    """A device array as an operand: a client's buffer or view as it is; another library's array
    as a launch reads one (``__cuda_array_interface__``, DLPack), checked to be on the client's
    device and ordered after its producer's stream once, here, so that its views launch as
    they are."""
    from cubejit.backends.cuda.buffer import CudaBuffer, CudaView, UnusableArray, device_array

    if isinstance(x, CudaBuffer | CudaView):
        if client is None:
            client = x.client
        elif x.client is not client:
            raise LaunchError(
                f"{name} is a buffer of another client: copy it to this one with "
                f"client.to_device(other.read(buffer))"
            )
        if isinstance(x, CudaView):
            # Its maker checked and ordered the memory; its owner is what a replay says.
            owner = x if x.owner is None else x.owner
            return Operand(client, x.scalar, x.shape, x.strides, x.ptr, owner, x.writeable)
        shape = x.shape
        return Operand(client, x.scalar, shape, _c_strides(shape), x.ptr, x)
    try:
        foreign = device_array(x, None)
    except UnusableArray as e:
        raise LaunchError(f"{name} cannot be read: {e}") from None
    except LookupError as e:
        raise LaunchError(f"{name} lives in {e} memory, not on a CUDA device") from None
    if foreign is None:
        raise LaunchError(
            f"{name}: a standard kernel takes a numpy array or a client's buffer, "
            f"not {type(x).__name__}"
        )
    if client is None:
        client = cj.client("cuda")
    elif client.backend != "cuda":
        raise LaunchError(f"{name} is a device array; on {client.backend} pass a host array")
    found = foreign.view
    scalar = bf16 if found.dtype == "bfloat16" else from_typestr(found.dtype)[1]
    if scalar is None:
        raise LaunchError(f"{name}: cubejit has no element type for {found.dtype}")
    shape = found.shape
    strides = found.element_strides()
    if strides is None or any(step < 0 for step in strides):
        raise LaunchError(f"{name}: cubejit takes no negative or partial-element strides")
    ptr = found.address
    if ptr and all(shape):
        adopt = getattr(client, "adopt_address", None)
        if adopt is not None:
            adopt(ptr, foreign.stream, f"cubejit.std: {name}")
    return Operand(client, scalar, shape, strides, ptr, x, found.writeable)


@functools.lru_cache(maxsize=256)
def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def floating(x: Operand, what: str) -> Scalar:
    """``x``'s element type, which must be a float the standard kernels compute on."""
    if x.scalar.name not in FLOATS:
        raise LaunchError(f"cubejit.std.{what} takes floating-point arrays, not {x.scalar.name}")
    if x.scalar.name == "bf16" and x.client.backend == "cpu":
        raise LaunchError(f"cubejit.std.{what}: the CPU backend has no bf16")
    return x.scalar


def accumulator(scalar: Scalar) -> Scalar:
    """What a kernel accumulates ``scalar`` in: ``f64`` for ``f64``, ``f32`` otherwise."""
    return f64 if scalar.name == "f64" else f32


def normalize_axis(axis: int, ndim: int, what: str) -> int:
    if not -ndim <= axis < ndim:
        raise LaunchError(f"cubejit.std.{what}: axis {axis} is out of range for {ndim} dimensions")
    return axis % ndim


Folded = tuple[tuple[int, int], list[tuple[int, int]]]


def fold_rows(shape: tuple[int, ...], strides: list[tuple[int, ...]], what: str) -> Folded:
    """Folds the dimensions ``shape`` (the same for every operand, whose strides are listed)
    into two, ``(A, B)``, with each operand's two strides: neighbouring dimensions fold where
    every operand steps over them as over one. LaunchError when more than two remain."""
    folded = try_fold(shape, strides)
    if folded is None:
        raise LaunchError(
            f"cubejit.std.{what}: the other dimensions of this array do not fold into two "
            f"(shape {shape}); pass a contiguous copy"
        )
    return folded


def try_fold(shape: tuple[int, ...], strides: list[tuple[int, ...]]) -> Folded | None:
    """:func:`fold_rows`, or ``None`` when more than two dimensions remain."""
    folded = _fold(shape, tuple(strides))
    return None if folded is None else (folded[0], list(folded[1]))


@functools.lru_cache(maxsize=256)
def _fold(
    shape: tuple[int, ...], strides: tuple[tuple[int, ...], ...]
) -> tuple[tuple[int, int], tuple[tuple[int, int], ...]] | None:
    """:func:`try_fold` of one layout, kept for the next call with it (a model calls a kernel
    on the same shapes over and over)."""
    dims = [(e, [s[d] for s in strides]) for d, e in enumerate(shape) if e != 1]
    folded: list[tuple[int, list[int]]] = []
    for extent, steps in dims:
        if folded:
            outer, outer_steps = folded[-1]
            if all(o == s * extent for o, s in zip(outer_steps, steps, strict=True)):
                folded[-1] = (outer * extent, steps)
                continue
        folded.append((extent, steps))
    if len(folded) > 2:
        return None
    while len(folded) < 2:
        folded.insert(0, (1, [0] * len(strides)))
    (a, a_steps), (b, b_steps) = folded
    return (a, b), tuple((sa, sb) for sa, sb in zip(a_steps, b_steps, strict=True))


def packed(array: Any, client: Client, shape: tuple[int, int, int]) -> Operand:
    """A contiguous array of ``client``'s as a rank-3 layout of ``shape``."""
    o = operand(array, client)
    _, b, n = shape
    return Operand(o.client, o.scalar, shape, (b * n, n, 1), o.base, o.owner)


def new_array(client: Client, shape: tuple[int, ...], scalar: Scalar) -> Any:
    """A new client array of ``shape`` (a numpy array on the CPU, a buffer on CUDA)."""
    buffer = client.empty(shape if shape else (1,), scalar)
    if client.backend == "cpu":
        return buffer.array.reshape(shape)
    return made_empty(buffer)


def output(
    out: Any, client: Client, shape: tuple[int, ...], scalar: Scalar, what: str
) -> tuple[Any, Operand]:
    """``out`` checked against ``shape`` and ``scalar``, or a new array of them; returned with
    its :class:`Operand`."""
    if out is None:
        out = new_array(client, shape, scalar)
    view = operand(out, client, "out")
    if view.shape != shape and not (shape == () and view.shape == (1,)):
        raise LaunchError(f"cubejit.std.{what}: out has shape {view.shape}, expected {shape}")
    if view.scalar != scalar:
        raise LaunchError(
            f"cubejit.std.{what}: out holds {view.scalar.name}, expected {scalar.name}"
        )
    if not view.writeable:
        raise LaunchError(f"cubejit.std.{what}: out is read-only; pass a writeable array")
    return out, view
