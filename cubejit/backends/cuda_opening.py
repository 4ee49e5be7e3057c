"""A CUDA device opened ahead: ``cuInit`` and the retain of the device's primary context, on a
thread of their own, started by :func:`cubejit.client` before the CUDA backend is imported.

Each takes about a hundred milliseconds on a data-center GPU, and ``cuda.bindings`` calls the
driver without holding the GIL, so the backend's imports run meanwhile instead of after them.
The module lives outside :mod:`cubejit.backends.cuda` so that starting it imports nothing of
that package. Nothing here makes the context current: the client's thread does that
(:func:`cubejit.backends.cuda.driver.open_device`), as every use of the context stays on it.
Whatever fails here is forgotten: ``open_device`` then does the work itself and reports what
went wrong as it always does.
"""

from __future__ import annotations

import threading
from typing import Any

_openings: dict[int, _Opening] = {}
_lock = threading.Lock()


class _Opening:
    """One device being opened on a thread: its handle and retained primary context, once
    done, or ``None`` when any step failed."""

    def __init__(self, ordinal: int) -> None:
        self.ordinal = ordinal
        self.opened: tuple[Any, Any] | None = None
        self._thread = threading.Thread(target=self._open, name="cubejit-cuda-open", daemon=True)
        self._thread.start()

    def _open(self) -> None:
        try:
            from cuda.bindings import driver

            (status,) = driver.cuInit(0)
            if status != 0:
                return
            status, device = driver.cuDeviceGet(self.ordinal)
            if status != 0:
                return
            status, context = driver.cuDevicePrimaryCtxRetain(device)
            if status != 0:
                return
        except Exception:
            return
        self.opened = (device, context)

    def result(self) -> tuple[Any, Any] | None:
        self._thread.join()
        return self.opened


def start(ordinal: int) -> None:
    """Starts opening device ``ordinal`` on a thread, unless that is under way already."""
    with _lock:
        if ordinal not in _openings:
            _openings[ordinal] = _Opening(ordinal)


def take(ordinal: int) -> tuple[Any, Any] | None:
    """The device handle and retained primary context :func:`start` got for ``ordinal``
    (waiting for its thread), handed over once; ``None`` when it was not started or failed."""
    with _lock:
        opening = _openings.pop(ordinal, None)
    return None if opening is None else opening.result()
