"""Clients: a backend's device as cubejit sees it (buffers, launches, limits).

:func:`client` gives the one client of a backend and device in this process, made on first
use; the CUDA backend is imported only when asked for, so the CPU works without CUDA installed.
Every client is a :class:`Client` (:mod:`cubejit.runtime.protocol`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from cubejit.errors import BackendUnavailableError
from cubejit.runtime.protocol import Client

if TYPE_CHECKING:
    from cubejit.config import Settings

__all__ = ["BACKENDS", "Client", "client"]

BACKENDS = ("cpu", "cuda")

_clients: dict[tuple[str, int, bool], Client] = {}
_lock = threading.Lock()
_opened_ahead: set[int] = set()


def client(backend: str = "cpu", device: int = 0, check_bounds: bool | None = None) -> Client:
    """The client of ``backend`` (``"cpu"`` or ``"cuda"``) on ``device``, the same object on
    every call. BackendUnavailableError when this machine cannot provide it.

    ``check_bounds=True`` gives a client that launches each kernel's checked variant (see
    :mod:`cubejit.runtime.checking`): an access out of bounds raises LaunchError after the
    launch. None (the default) follows the ``check_bounds`` setting
    (``CUBEJIT_CHECK_BOUNDS``)."""
    if backend == "cuda":
        _open_ahead(device)
    checked = _check_bounds() if check_bounds is None else check_bounds
    key = (backend, device, checked)
    found = _clients.get(key)
    if found is not None:
        return found
    with _lock:
        found = _clients.get(key)
        if found is None:
            found = _clients[key] = _make(backend, device, checked)
    return found


def _check_bounds() -> bool:
    """The ``check_bounds`` setting, the settings imported on first need (after the driver began
    opening a device)."""
    global _settings
    if _settings is None:
        from cubejit.config import settings

        _settings = settings
    return _settings().check_bounds


_settings: Callable[[], Settings] | None = None


def _open_ahead(device: int) -> None:
    """Starts the driver opening CUDA ``device`` on a thread of its own
    (:mod:`cubejit.backends.cuda_opening`) the first time a client of it is asked for, before
    anything else is imported or read (the settings included), so that all of that runs while
    the driver works."""
    if device not in _opened_ahead:
        _opened_ahead.add(device)
        from cubejit.backends import cuda_opening

        cuda_opening.start(device)


def _make(backend: str, device: int, check_bounds: bool) -> Client:
    import cubejit.lang.identity  # noqa: F401 -- here, so that no first launch imports it

    if backend == "cpu":
        from cubejit.backends.cpu.client import CpuClient

        return CpuClient(device, check_bounds=check_bounds)
    if backend == "cuda":
        from cubejit.backends.cuda.client import CudaClient

        return CudaClient(device, check_bounds=check_bounds)
    raise BackendUnavailableError(f"no backend {backend!r}; cubejit has {', '.join(BACKENDS)}")
