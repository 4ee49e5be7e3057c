"""The CPU client: buffers in this process's memory, and launches that run in native code.

Launches are synchronous: one native call runs every cube over OpenMP's thread pool and returns
when the kernel is done, so :meth:`CpuClient.sync` has nothing to wait for. Numpy arrays are
accepted as launch arguments as they are, without a copy; every launch goes through the
client's :class:`~cubejit.compile.loader.KernelLoader`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cubejit.backends.cpu.compiler import CPU_LIMITS
from cubejit.backends.cpu.launcher import MAX_ALIGN, ArgBinder, CpuBuffer
from cubejit.backends.cpu.target import CpuTarget
from cubejit.errors import BackendUnavailableError, LaunchError
from cubejit.ir.types import Scalar, from_dtype
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
    ) -> None:
        if device != 0:
            raise BackendUnavailableError(f"the CPU backend has one device, 0; not {device!r}")
        self.device = device
        self.limits = CPU_LIMITS
        """What a launch may ask of this device."""
        self.target = target if target is not None else CpuTarget()
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

    def to_device(self, array: Any) -> CpuBuffer:
        """A copy of ``array`` (flattened in C order) in a new 64-byte aligned buffer."""
        source = np.asarray(array)
        buffer = self.empty(source.size, source.dtype)
        buffer.array[...] = source.reshape(-1)
        return buffer

    def empty(self, n: int, dtype: Any) -> CpuBuffer:
        """A new 64-byte aligned buffer of ``n`` elements of ``dtype`` (a cubejit scalar such
        as ``cj.f32`` or a numpy dtype), not initialised."""
        dtype = dtype.dtype if isinstance(dtype, Scalar) else np.dtype(dtype)
        if from_dtype(dtype) is None:
            raise LaunchError(f"cubejit has no scalar type for numpy dtype {dtype}")
        nbytes = int(n) * dtype.itemsize
        raw = np.empty(nbytes + MAX_ALIGN, dtype=np.uint8)
        start = -raw.ctypes.data % MAX_ALIGN
        return CpuBuffer(raw[start : start + nbytes].view(dtype), self)

    def read(self, buffer: CpuBuffer | np.ndarray) -> np.ndarray:
        """A numpy copy of ``buffer``'s elements."""
        if isinstance(buffer, CpuBuffer):
            return buffer.array.copy()
        return np.array(buffer, copy=True)

    def sync(self) -> None:
        """Waits for launched work: none is ever pending, CPU launches return when done."""

    def prepare(self, spec: Any) -> None:
        """Queues ``spec`` for compiling (for 64-byte aligned buffers, as this client's are)."""
        self.loader.enqueue(spec, MAX_ALIGN)

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
        aid = binder.artifact_id(variant)
        loaded = self.loader.get(aid) or self.loader.load(spec, aid, self.logger)
        loaded.entry(packed)
