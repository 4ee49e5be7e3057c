"""A CUDA device opened ahead: ``cuInit`` and the retain of the device's primary context, on a
thread of their own, started by :func:`cubejit.client` before the CUDA backend is imported.

Each takes about a hundred milliseconds on a data-center GPU. The thread calls ``libcuda``
through :mod:`ctypes`, which releases the GIL for each call, so that it starts at once: going
through ``cuda.bindings.driver`` would first import it (tens of milliseconds, holding the GIL).
The client's thread imports those bindings and the backend meanwhile, instead of after the
driver's work. The module lives outside :mod:`cubejit.backends.cuda` so that starting it
imports nothing of that package. Nothing here makes the context current: the client's thread
does that (:func:`cubejit.backends.cuda.driver.open_device`), as every use of the context
stays on it. Whatever fails here is forgotten: ``open_device`` then does the work itself and
reports what went wrong as it always does.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any

LIBRARY = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
"""The driver library, by the name ``cuda.bindings`` loads it under: its loader takes the one
already loaded in the process, so both call the same driver and the handles pass between
them."""

_openings: dict[int, _Opening] = {}
_lock = threading.Lock()


def _library() -> Any:
    """``libcuda``, loaded through :mod:`ctypes` (each call releases the GIL)."""
    return ctypes.CDLL(LIBRARY)


class _Opening:
    """One device being opened on a thread: its handle and retained primary context (as the
    driver's integers: an ordinal and an address), once done, or ``None`` when any step
    failed."""

    def __init__(self, ordinal: int) -> None:
        self.ordinal = ordinal
        self.opened: tuple[int, int] | None = None
        self._thread = threading.Thread(target=self._open, name="cubejit-cuda-open", daemon=True)
        self._thread.start()

    def _open(self) -> None:
        try:
            library = _library()
            if library.cuInit(0) != 0:
                return
            device = ctypes.c_int()
            if library.cuDeviceGet(ctypes.byref(device), self.ordinal) != 0:
                return
            context = ctypes.c_void_p()
            if library.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) != 0:
                return
        except Exception:
            return
        if context.value:
            self.opened = (device.value, context.value)

    def running(self) -> bool:
        return self._thread.is_alive()

    def result(self) -> tuple[int, int] | None:
        self._thread.join()
        return self.opened


def start(ordinal: int) -> None:
    """Starts opening device ``ordinal`` on a thread, unless that is under way already."""
    with _lock:
        if ordinal not in _openings:
            _openings[ordinal] = _Opening(ordinal)


def under_way(ordinal: int) -> bool:
    """Whether the driver is still opening device ``ordinal`` on its thread: the client's
    thread, which would wait for it anyway, may do more of its own work meanwhile."""
    with _lock:
        opening = _openings.get(ordinal)
    return opening is not None and opening.running()


def take(ordinal: int) -> tuple[int, int] | None:
    """The device (its driver handle, an integer) and retained primary context (its address)
    :func:`start` got for ``ordinal``, waiting for its thread, handed over once; ``None`` when
    it was not started or failed."""
    with _lock:
        opening = _openings.pop(ordinal, None)
    return None if opening is None else opening.result()
