"""Clients: a backend's device as cubejit sees it (buffers, launches, limits).

:func:`client` gives the one client of a backend and device in this process, made on first
use; the CUDA backend is imported only when asked for, so the CPU works without CUDA installed.
"""

from __future__ import annotations

import threading
from typing import Any

from cubejit.errors import BackendUnavailableError

BACKENDS = ("cpu", "cuda")

_clients: dict[tuple[str, int], Any] = {}
_lock = threading.Lock()


def client(backend: str = "cpu", device: int = 0) -> Any:
    """The client of ``backend`` (``"cpu"`` or ``"cuda"``) on ``device``, the same object on
    every call. BackendUnavailableError when this machine cannot provide it."""
    key = (backend, device)
    found = _clients.get(key)
    if found is not None:
        return found
    with _lock:
        found = _clients.get(key)
        if found is None:
            found = _clients[key] = _make(backend, device)
    return found


def _make(backend: str, device: int) -> Any:
    if backend == "cpu":
        from cubejit.backends.cpu.client import CpuClient

        return CpuClient(device)
    if backend == "cuda":
        from cubejit.backends.cuda.client import CudaClient

        return CudaClient(device)
    raise BackendUnavailableError(f"no backend {backend!r}; cubejit has {', '.join(BACKENDS)}")
