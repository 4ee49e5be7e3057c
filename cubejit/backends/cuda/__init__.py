"""The CUDA backend: IR to CUDA C++, NVRTC to a cubin for the device's exact architecture,
loaded and launched through the driver.

:class:`CudaCompiler` and :class:`CudaTarget` are its two halves of the compile pipeline,
:class:`CudaClient` its device. Importing this package needs neither ``cuda-bindings`` nor a GPU:
only making a client (or compiling) does, and says what is missing when it is.
"""

from __future__ import annotations

from cubejit.backends.cuda.artifact import ENTRY_POINT, CudaArtifact, ParamSlot
from cubejit.backends.cuda.buffer import CudaBuffer
from cubejit.backends.cuda.client import CudaClient
from cubejit.backends.cuda.compiler import CudaCompiler, CudaLowered
from cubejit.backends.cuda.dialect import CudaDialect, cuda_source
from cubejit.backends.cuda.driver import CudaLimits
from cubejit.backends.cuda.target import CudaKernelHandle, CudaTarget, fingerprint

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
