"""Whether this machine has what compiling CUDA needs (NVRTC, cuda-bindings), for skipping."""

from __future__ import annotations

import functools

from cubejit.errors import BackendUnavailableError


@functools.cache
def missing_cuda_packages() -> str | None:
    """Why NVRTC cannot run here, or ``None`` when it can."""
    from cubejit.backends.cuda.nvrtc import version

    try:
        version()
    except BackendUnavailableError as e:
        return str(e)
    return None
