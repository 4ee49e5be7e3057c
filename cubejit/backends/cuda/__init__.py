"""The CUDA backend: IR to CUDA C++, NVRTC to a cubin for the device's exact architecture,
loaded and launched through the driver.

:class:`CudaCompiler` and :class:`CudaTarget` are its two halves of the compile pipeline,
:class:`CudaClient` its device. Importing this package needs neither ``cuda-bindings`` nor a GPU:
only making a client (or compiling) does, and says what is missing when it is. Its names are
imported when first used (PEP 562), so that a client, which imports
:mod:`cubejit.backends.cuda.client` through this package, loads none of the lowering to C++.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cubejit.backends.cuda.artifact import ENTRY_POINT, CudaArtifact, ParamSlot
    from cubejit.backends.cuda.buffer import CudaBuffer
    from cubejit.backends.cuda.client import CudaClient
    from cubejit.backends.cuda.compiler import CudaCompiler, CudaLowered
    from cubejit.backends.cuda.dialect import CudaDialect, cuda_source
    from cubejit.backends.cuda.driver import CudaLimits
    from cubejit.backends.cuda.target import CudaKernelHandle, CudaTarget, fingerprint

_HOMES = {
    "ENTRY_POINT": "artifact",
    "CudaArtifact": "artifact",
    "ParamSlot": "artifact",
    "CudaBuffer": "buffer",
    "CudaClient": "client",
    "CudaCompiler": "compiler",
    "CudaLowered": "compiler",
    "CudaDialect": "dialect",
    "cuda_source": "dialect",
    "CudaLimits": "driver",
    "CudaKernelHandle": "target",
    "CudaTarget": "target",
    "fingerprint": "target",
}

__all__ = [
    "ENTRY_POINT",
    "CudaArtifact",
    "CudaBuffer",
    "CudaClient",
    "CudaCompiler",
    "CudaDialect",
    "CudaKernelHandle",
    "CudaLimits",
    "CudaLowered",
    "CudaTarget",
    "ParamSlot",
    "cuda_source",
    "fingerprint",
]


def __getattr__(name: str) -> object:
    """A name of ``__all__``, imported from its module when first named."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'cubejit.backends.cuda' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"cubejit.backends.cuda.{home}"), name)
    globals()[name] = value
    return value
