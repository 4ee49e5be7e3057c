"""The CPU client: buffers in this process's memory, and launches that run in native code.

Launches are synchronous: one native call runs every cube over OpenMP's thread pool and returns
when the kernel is done, so :meth:`CpuClient.sync` has nothing to wait for. Numpy arrays (and
subclasses such as ``np.memmap``) are accepted as launch arguments as they are, without a copy,
as arrays when C-contiguous and as tensors of any non-negative strides; every launch goes
through the client's :class:`~cubejit.compile.loader.KernelLoader`. The client is a
:class:`~cubejit.runtime.client.Client`.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

from cubejit.backends.cpu.compiler import CPU_LIMITS, CpuCompiler
from cubejit.backends.cpu.launcher import MAX_ALIGN, ArgBinder, CpuBuffer
from cubejit.backends.cpu.layout import make_variant
from cubejit.backends.cpu.target import CpuTarget
from cubejit.errors import BackendUnavailableError, LaunchError
from cubejit.ir.types import Scalar, from_dtype
from cubejit.runtime.checking import RECORD_BYTES, bounds_error, checked_variant
from cubejit.runtime.layout import U32_MAX, all_contiguous
from cubejit.runtime.limits import dims3


class CpuClient:
    """The CPU as a cubejit device (there is one: device 0)."""

    backend = "cpu"

    def __init__(
        self,
        device: int = 0,
        target: CpuTarget | None = None,
        loader: Any = None,
        logger: Any = None,
        check_bounds: bool = False,
    ) -> None:
        if device != 0:
            raise BackendUnavailableError(f"the CPU backend has one device, 0; not {device!r}")
        self.device = device
        self.limits = CPU_LIMITS
        """What a launch may ask of this device."""
        self.target = target if target is not None else CpuTarget()
        self.compiler: CpuCompiler = self.target.compiler()
        """The compiler of this client's kernels (``compiler.compilations`` counts its C
        compiler runs)."""
        if loader is None:
            from cubejit.compile.loader import KernelLoader

            loader = KernelLoader(self.target)
        self.loader = loader
        """The one path by which this client's kernels are compiled and loaded."""
        if logger is None:
            from cubejit.compile.recording import ServerLogger

            logger = ServerLogger()
        self.logger = logger
        self._binders: dict[int, ArgBinder] = {}
        self._max_count_x = CPU_LIMITS.max_cube_count[0]
        self.check_bounds = check_bounds
        """Whether this client launches checked variants (:mod:`cubejit.runtime.checking`)."""
        if check_bounds:
            self.launch = self._launch_checked  # type: ignore[method-assign]
            self._records: dict[int, tuple[Any, ctypes.Array[ctypes.c_char]]] = {}
            """Each loaded checked artifact's record, by the loaded object's id (kept)."""

    def to_device(self, array: Any, dtype: Any = None) -> CpuBuffer:
        """A copy of ``array`` in a new 64-byte aligned, C-contiguous buffer of its shape."""
        try:
            source = np.asarray(array, dtype=_dtype(dtype) if dtype is not None else None)
        except (TypeError, ValueError) as e:
            raise LaunchError(f"cannot copy {type(array).__name__} to the device: {e}") from None
        buffer = self.empty(source.shape, source.dtype)
        buffer.array[...] = source
        return buffer

    def empty(self, shape: Any, dtype: Any) -> CpuBuffer:
        """A new 64-byte aligned buffer of ``shape`` (a number of elements, or a tuple for a
        C-contiguous tensor) of ``dtype`` (a cubejit scalar such as ``cj.f32`` or a numpy
        dtype), not initialised."""
        dims = _shape(shape)
        numpy_dtype = _dtype(dtype)
        nbytes = math.prod(dims) * numpy_dtype.itemsize
        raw = np.empty(nbytes + MAX_ALIGN, dtype=np.uint8)
        start = -raw.ctypes.data % MAX_ALIGN
        return CpuBuffer(raw[start : start + nbytes].view(numpy_dtype).reshape(dims), self)

    def read(self, buffer: CpuBuffer | np.ndarray) -> np.ndarray:
        """A numpy copy of ``buffer``'s elements, in its shape."""
        if isinstance(buffer, CpuBuffer):
            return buffer.array.copy()
        if isinstance(buffer, np.ndarray):
            return np.array(buffer, copy=True)
        raise LaunchError(
            f"client.read takes a buffer or a numpy array, not {type(buffer).__name__}"
        )

    def sync(self) -> None:
        """Waits for launched work: none is ever pending, CPU launches return when done."""

    def prepare(self, spec: Any) -> None:
        """Queues ``spec`` for compiling (for 64-byte aligned buffers, as this client's are, and
        tensors contiguous innermost)."""
        tensors = all_contiguous(spec.params)
        variant = make_variant(MAX_ALIGN, tensors, tensors.bit_length())
        self.loader.enqueue(spec, checked_variant(variant) if self.check_bounds else variant)

    def compile_queued(self) -> None:
        """Compiles every queued kernel now."""
        self.loader.compile_queued()

    def launch(self, spec: Any, cube_count: Any, args: tuple[Any, ...]) -> None:
        """Runs ``spec`` over ``cube_count`` cubes with ``args``; returns when it is done.
        Arguments are checked against ``spec.params`` before anything runs (LaunchError)."""
        binder = self._binders.get(id(spec))
        if binder is None or binder.spec is not spec:
            binder = self._binders[id(spec)] = ArgBinder(spec, self)
        if type(cube_count) is int and 1 <= cube_count <= self._max_count_x:
            counts = (cube_count, 1, 1)
        else:
            counts = dims3(cube_count, "cube_count", spec.name)
            self.limits.check_cube_count(counts, spec.name)
        packed, variant = binder.bind(counts, args)
        written = binder.written
        if written:
            binder.check_written(args, written)
        aid = binder.artifact_id(variant)
        loaded = self.loader.get(aid) or self.loader.load(spec, aid, self.logger)
        if written is None:
            binder.written = loaded.written
            binder.check_written(args, loaded.written)
        loaded.entry(packed)

    def _launch_checked(self, spec: Any, cube_count: Any, args: tuple[Any, ...]) -> None:
        """:meth:`launch` of the checked variant (a checked client's ``launch``): raises
        LaunchError naming the access after a launch in which one was out of bounds."""
        binder = self._binders.get(id(spec))
        if binder is None or binder.spec is not spec:
            binder = self._binders[id(spec)] = ArgBinder(spec, self)
        counts = dims3(cube_count, "cube_count", spec.name)
        self.limits.check_cube_count(counts, spec.name)
        packed, variant = binder.bind(counts, args)
        aid = binder.artifact_id(checked_variant(variant))
        loaded = self.loader.get(aid) or self.loader.load(spec, aid, self.logger)
        binder.written = loaded.written
        binder.check_written(args, loaded.written)
        found = self._records.get(id(loaded))
        if found is None:
            record = (ctypes.c_char * RECORD_BYTES).in_dll(loaded.library, loaded.record)
            self._records[id(loaded)] = (loaded, record)
        else:
            record = found[1]
        ctypes.memset(record, 0, RECORD_BYTES)
        loaded.entry(packed)
        error = bounds_error(spec, bytes(record))
        if error is not None:
            raise error


def _shape(shape: Any) -> tuple[int, ...]:
    """``shape`` (an int, or a tuple of ints, numpy integers included) as a tuple; LaunchError
    for anything else or a size past what a ``u32`` length holds."""
    dims = tuple(shape) if isinstance(shape, tuple | list) else (shape,)
    if not dims or not all(
        isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0 for d in dims
    ):
        raise LaunchError(
            f"a buffer's shape is a number of elements or a tuple of them, not {shape!r}"
        )
    dims = tuple(int(d) for d in dims)
    if math.prod(dims) > U32_MAX:
        raise LaunchError(
            f"a buffer of shape {dims} has {math.prod(dims)} elements; at most {U32_MAX} fit a "
            f"u32 length"
        )
    return dims


def _dtype(dtype: Any) -> np.dtype:
    """The numpy dtype of a buffer of ``dtype`` (a cubejit scalar or a numpy dtype)."""
    if isinstance(dtype, Scalar):
        return dtype.dtype
    try:
        numpy_dtype = np.dtype(dtype)
    except TypeError:
        raise LaunchError(
            f"{dtype!r} is not an element type; pass cj.f32 or a numpy dtype"
        ) from None
    if from_dtype(numpy_dtype) is None:
        raise LaunchError(f"cubejit has no scalar type for numpy dtype {numpy_dtype}")
    return numpy_dtype
