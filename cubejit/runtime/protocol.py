"""What every backend's client is: the :class:`Client` Protocol a kernel launches through.

A client owns one device's memory and launches: ``to_device``/``empty`` make buffers (a tuple
shape makes a C-contiguous tensor), ``read`` copies one back as a numpy array of its shape,
``sync`` waits for launched work, ``launch`` runs a kernel spec, ``prepare`` queues one for the
next compile batch. ``compiler.compilations`` counts the platform compiler's runs for that
client (the C compiler on the CPU, NVRTC on CUDA): tests and benchmarks count compiles with it,
never by timing. Every refusal is a :class:`~cubejit.errors.LaunchError`, worded the same on
every backend (:mod:`cubejit.runtime.arguments`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from cubejit.runtime.limits import DeviceLimits


@runtime_checkable
class CountsCompilations(Protocol):
    """A backend's compiler, as a client exposes it."""

    @property
    def compilations(self) -> int:
        """How many times it has run the platform compiler."""
        ...


@runtime_checkable
class Client(Protocol):
    """One backend's device, as kernels and users see it."""

    backend: str
    """``"cpu"`` or ``"cuda"``."""

    @property
    def limits(self) -> DeviceLimits:
        """The largest cube and launch the device runs."""
        ...

    @property
    def compiler(self) -> CountsCompilations:
        """The compiler of this client's kernels."""
        ...

    def to_device(self, array: Any, dtype: Any = None) -> Any:
        """A new buffer holding a copy of ``array``, of its shape."""
        ...

    def empty(self, shape: Any, dtype: Any) -> Any:
        """A new buffer of ``shape`` (an int, or a tuple for a tensor), not initialised."""
        ...

    def read(self, buffer: Any) -> np.ndarray:
        """A numpy copy of ``buffer``, of its shape, once launched work has finished."""
        ...

    def sync(self) -> None:
        """Waits for every launch and copy of this client."""
        ...

    def launch(self, spec: Any, cube_count: Any, args: tuple[Any, ...]) -> None:
        """Runs ``spec`` over ``cube_count`` cubes with ``args``, checked first."""
        ...

    def prepare(self, spec: Any) -> None:
        """Queues ``spec`` for the next compile batch."""
        ...
