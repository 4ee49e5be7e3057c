"""Clients: a backend's device as cubejit sees it (buffers, launches, limits).

:func:`client` gives the one client of a backend and device in this process, made on first
use; the CUDA backend is imported only when asked for, so the CPU works without CUDA installed.
Every client is a :class:`Client` (:mod:`cubejit.runtime.protocol`).
"""

from __future__ import annotations

import threading

from cubejit.errors import BackendUnavailableError
from cubejit.runtime.protocol import Client

__all__ = ["BACKENDS", "Client", "client"]

BACKENDS = ("cpu", "cuda")

_clients: dict[tuple[str, int], Client] = {}
_lock = threading.Lock()


def client(backend: str = "cpu", device: int = 0) -> Client:
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


def _make(backend: str, device: int) -> Client:
    if backend == "cpu":
        from cubejit.backends.cpu.client import CpuClient

        return CpuClient(device)
    if backend == "cuda":
        from cubejit.backends import cuda_opening

        cuda_opening.start(device)
        from cubejit.backends.cuda.client import CudaClient

        return CudaClient(device)
    raise BackendUnavailableError(f"no backend {backend!r}; cubejit has {', '.join(BACKENDS)}")
