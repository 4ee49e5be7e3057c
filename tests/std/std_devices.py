"""A backend as the standard-kernel tests use it: host arrays in, host arrays out, and strided
views made on the device from a host array's strides."""

from __future__ import annotations

from typing import Any

import numpy as np

from cubejit.runtime.protocol import Client
from cubejit.std.views import operand


class Device:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.backend = client.backend

    def put(self, host: np.ndarray) -> Any:
        """``host`` on the device with the same shape and strides (a view of a copy of the
        memory it spans)."""
        if self.backend == "cpu":
            return host
        span = np.lib.stride_tricks.as_strided(
            host, (_span(host),), (host.itemsize,), writeable=False
        )
        buffer = self.client.to_device(np.array(span))
        strides = tuple(s // host.itemsize for s in host.strides)
        return _Kept(operand(buffer, self.client).view(host.shape, strides), buffer)

    def get(self, result: Any) -> np.ndarray:
        if self.backend == "cpu":
            return np.asarray(result)
        self.client.sync()
        return self.client.read(result)


def _span(host: np.ndarray) -> int:
    if host.size == 0:
        return 1
    return (
        1 + sum((e - 1) * s for e, s in zip(host.shape, host.strides, strict=True)) // host.itemsize
    )


class _Kept:
    """A device view that keeps the buffer it views alive."""

    def __init__(self, view: Any, buffer: Any) -> None:
        self.view = view
        self.buffer = buffer

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return self.view.__cuda_array_interface__
