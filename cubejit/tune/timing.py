"""Timing candidates: copies of the arguments, a clock per backend, and when to stop.

**Copies.** Candidates run on copies of the array arguments, so that tuning never changes a
caller's data: numpy arrays (copied at the same offset from a 64-byte boundary, so a CPU launch
picks the same alignment variant as on the original), CPU and CUDA buffers of a client, and
other libraries' CUDA arrays (``clone()`` or ``copy()``). Anything else (numbers, strings,
objects cubejit does not know) is passed as it is. Each candidate gets fresh copies.

**Clocks.** On CUDA, events recorded on the client's stream around each run (the device's own
time); on the CPU, the wall clock around the run, whose launches return when done.

**Stopping.** After one untimed warm-up (which compiles), a candidate runs until its median is
known to ±5%: the distribution-free 95% interval of the median (between order statistics)
spans at most a tenth of the median, after at least :data:`MIN_RUNS` runs. It stops sooner when
its share of the budget is spent (the key's budget left, split over the candidates left), or
after :data:`MAX_RUNS`. A candidate whose best run is already slower than the leader's median,
after :data:`MIN_RUNS_TO_DROP` runs, is dropped: it cannot win.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

MIN_RUNS = 5
"""Timed runs every candidate gets (budget or not) before its median counts."""
MAX_RUNS = 500
"""Timed runs after which a candidate stops, converged or not."""
MIN_RUNS_TO_DROP = 3
"""Timed runs a candidate gets before it may be dropped for being slower than the leader."""
PRECISION = 0.05
"""How well a median must be known: the interval's half-width over the median."""
_ALIGN = 64
_Z95 = 1.96


class Clock(Protocol):
    """Times one run of a candidate on a client's device."""

    def time_ns(self, run: Callable[[], object]) -> int:
        """The device time ``run`` took, in nanoseconds; ``run``'s exceptions propagate."""
        ...


class WallClock:
    """The CPU's clock: the wall time of a run that returns when its launches are done."""

    def __init__(self, client: Any) -> None:
        self._sync = client.sync

    def time_ns(self, run: Callable[[], object]) -> int:
        started = time.perf_counter_ns()
        run()
        self._sync()
        return time.perf_counter_ns() - started


class CudaEventClock:
    """CUDA events on the client's stream before and after a run; their elapsed time."""

    def __init__(self, client: Any) -> None:
        from cubejit.backends.cuda.driver import call, driver_module

        self._driver = driver_module()
        self._call = call
        self._stream = self._driver.CUstream(client.stream_handle)
        client.sync()
        self._start = call(self._driver.cuEventCreate, 0, what="create a timing event")
        self._end = call(self._driver.cuEventCreate, 0, what="create a timing event")

    def time_ns(self, run: Callable[[], object]) -> int:
        call, driver = self._call, self._driver
        call(driver.cuEventRecord, self._start, self._stream, what="record a timing event")
        run()
        call(driver.cuEventRecord, self._end, self._stream, what="record a timing event")
        call(driver.cuEventSynchronize, self._end, what="wait for a timed run")
        ms = call(driver.cuEventElapsedTime, self._start, self._end, what="read a timed run")
        return max(1, int(float(ms) * 1e6))

    def __del__(self) -> None:
        for event in (getattr(self, "_start", None), getattr(self, "_end", None)):
            if event is not None:
                self._driver.cuEventDestroy(event)


def clock_for(client: Any) -> Clock:
    """The clock of ``client``'s backend."""
    return (
        CudaEventClock(client) if getattr(client, "backend", "cpu") == "cuda" else WallClock(client)
    )


def copy_argument(client: Any, value: Any) -> Any:
    """A copy of ``value`` that a candidate may write, when it is an array; else ``value``."""
    if isinstance(value, np.ndarray):
        return _aligned_copy(value)
    backend = getattr(client, "backend", None)
    if backend == "cpu" and hasattr(value, "array") and hasattr(value, "address"):
        return client.to_device(value.array)
    if backend == "cuda" and hasattr(value, "ptr") and hasattr(value, "scalar"):
        return _device_copy(client, value)
    if hasattr(value, "__cuda_array_interface__"):
        for method in ("clone", "copy"):
            copy = getattr(value, method, None)
            if callable(copy):
                return copy()
    return value


def copy_arguments(client: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(copy_argument(client, a) for a in args)


def _aligned_copy(array: np.ndarray) -> np.ndarray:
    """A C-ordered copy of ``array`` whose address has the same remainder modulo 64."""
    if array.nbytes == 0 or not array.flags.c_contiguous:
        return array.copy()
    raw = np.empty(array.nbytes + _ALIGN, dtype=np.uint8)
    start = (array.ctypes.data - raw.ctypes.data) % _ALIGN
    copy = raw[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def _device_copy(client: Any, buffer: Any) -> Any:
    from cubejit.backends.cuda.driver import call, driver_module

    driver = driver_module()
    copy = client.empty(buffer.n, buffer.scalar)
    if buffer.n:
        client.sync()
        call(
            driver.cuMemcpyDtoDAsync,
            copy.ptr,
            buffer.ptr,
            buffer.n * buffer.scalar.itemsize,
            driver.CUstream(client.stream_handle),
            what="copy an argument for tuning",
        )
    strides = getattr(buffer, "strides", None)
    if strides is None:
        return copy
    from cubejit.backends.cuda.buffer import CudaView

    return CudaView(client, buffer.scalar, copy.ptr, buffer.shape, strides, copy)


def median_known(ordered: list[int]) -> bool:
    """Whether the sorted runs ``ordered`` know their median to ±:data:`PRECISION`."""
    n = len(ordered)
    if n < MIN_RUNS:
        return False
    half = _Z95 * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - half))
    high = min(n - 1, math.ceil(n / 2 + half) - 1)
    median = ordered[n // 2]
    return ordered[high] - ordered[low] <= 2 * PRECISION * median


@dataclass(slots=True)
class Measured:
    """One candidate's timed runs so far."""

    times_ns: list[int] = field(default_factory=list)
    ordered: list[int] = field(default_factory=list)
    dropped: bool = False

    def add(self, ns: int) -> None:
        self.times_ns.append(ns)
        bisect.insort(self.ordered, ns)

    @property
    def median(self) -> float:
        n = len(self.ordered)
        if n == 0:
            return math.inf
        if n % 2:
            return float(self.ordered[n // 2])
        return (self.ordered[n // 2 - 1] + self.ordered[n // 2]) / 2


def measure(clock: Clock, run: Callable[[], object], budget_s: float, leader: float) -> Measured:
    """Times ``run`` (already warmed up) by the rules of the module docstring; ``leader`` is
    the best median so far in nanoseconds (``inf`` for the first candidate)."""
    measured = Measured()
    deadline = time.perf_counter() + budget_s
    while len(measured.times_ns) < MAX_RUNS:
        measured.add(clock.time_ns(run))
        runs = len(measured.times_ns)
        if runs >= MIN_RUNS_TO_DROP and measured.ordered[0] > leader:
            measured.dropped = True
            return measured
        if runs >= MIN_RUNS and (median_known(measured.ordered) or time.perf_counter() > deadline):
            return measured
    return measured
