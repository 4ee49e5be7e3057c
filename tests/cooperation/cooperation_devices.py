"""A backend as the cooperation tests see it: a client and the few things a test asks of it."""

from __future__ import annotations

from typing import Any

import numpy as np

import cubejit as cj


class Device:
    """A client and the few things a test asks of it."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def put(self, array: np.ndarray) -> Any:
        return self.client.to_device(np.ascontiguousarray(array))

    def get(self, buffer: Any) -> np.ndarray:
        return np.asarray(self.client.read(buffer))

    def plane_dim(self) -> int:
        """``cj.PLANE_DIM`` as a kernel on this backend reads it."""
        out = self.put(np.zeros(1, np.uint32))
        plane_dim_of.launch(self.client, 1, 1, out)
        return int(self.get(out)[0])


@cj.kernel
def plane_dim_of(out: cj.Array[cj.u32]):
    out[0] = cj.PLANE_DIM
