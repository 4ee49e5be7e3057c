"""Device memory for a client's buffers, allocated and freed in the order of its stream.

``cuMemAlloc`` costs tens of microseconds and ``cuMemFree`` waits for the whole device, which a
standard kernel's scratch buffers paid on every call. Where the device has memory pools, a
client allocates from a pool of its own on its stream (``cuMemAllocFromPoolAsync``) and frees
back to it there (``cuMemFreeAsync``): memory a freed buffer held is handed out again once the
client's stream has passed the buffer's last use, and the pool keeps what it holds instead of
giving it back at every synchronisation. A buffer freed while another library's stream still
reads it must be waited for by that library, as with CuPy's and PyTorch's caching allocators.
Devices without pools allocate with ``cuMemAlloc`` and free with ``cuMemFree``.
"""

from __future__ import annotations

from typing import Any

from cubejit.backends.cuda.driver import call

KEEP_EVERYTHING = 2**64 - 1
"""The pool's release threshold: bytes it keeps when the stream synchronises (all of them)."""


class DeviceMemory:
    """Allocates and frees one client's device memory on its stream (the context current).
    The pool is made at the first allocation, so that a client which never allocates (a warm
    process launching on another library's arrays) never pays for it."""

    def __init__(self, driver: Any, handle: Any, ordinal: int, stream: Any) -> None:
        self._driver = driver
        self._handle = handle
        self._ordinal = ordinal
        self._stream = stream
        self._pool: Any = None
        self._asked = False

    @property
    def pooled(self) -> bool:
        """Whether allocations come from the client's stream-ordered pool."""
        return self._pool is not None

    def allocate(self, nbytes: int, what: str) -> int:
        """The address of ``nbytes`` new bytes, usable by work queued on the stream from now."""
        driver = self._driver
        if not self._asked:
            self._pool = _pool(driver, self._handle, self._ordinal)
            self._asked = True
        if self._pool is None:
            return int(call(driver.cuMemAlloc, nbytes, what=what))
        return int(
            call(driver.cuMemAllocFromPoolAsync, nbytes, self._pool, self._stream, what=what)
        )

    def free(self, ptr: int) -> None:
        """Gives ``ptr`` back once the work queued on the stream so far is done."""
        if self._pool is None:
            self._driver.cuMemFree(ptr)
        else:
            self._driver.cuMemFreeAsync(ptr, self._stream)


def _pool(driver: Any, handle: Any, ordinal: int) -> Any:
    """A memory pool of the device (``handle``, ``ordinal``) that keeps what it holds, or
    ``None`` where the device or driver has none."""
    try:
        supported = call(
            driver.cuDeviceGetAttribute,
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
            handle,
            what="ask whether the device has memory pools",
        )
        if not supported:
            return None
        props = driver.CUmemPoolProps()
        props.allocType = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        props.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        props.location.id = ordinal
        pool = call(driver.cuMemPoolCreate, props, what="create a memory pool")
        call(
            driver.cuMemPoolSetAttribute,
            pool,
            driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            driver.cuuint64_t(KEEP_EVERYTHING),
            what="keep the memory pool's memory",
        )
    except Exception:
        return None
    return pool
