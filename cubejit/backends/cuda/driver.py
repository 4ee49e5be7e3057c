"""The CUDA driver, as cubejit uses it: one device, its primary context, its limits.

Everything that talks to ``libcuda`` through ``cuda.bindings.driver`` goes through
:func:`call`, which turns a failed ``CUresult`` into the cubejit error the caller names, with
the driver's own words. Opening a device is where a machine without the CUDA packages or
without a GPU is told so, in a :class:`~cubejit.errors.BackendUnavailableError`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from cubejit.backends import cuda_opening
from cubejit.backends.cuda.nvrtc import INSTALL_HINT
from cubejit.errors import BackendUnavailableError, CubejitError, LaunchError
from cubejit.runtime.limits import DeviceLimits


def driver_module():
    """``cuda.bindings.driver``, or :class:`BackendUnavailableError` saying what to install."""
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise BackendUnavailableError(
            f"the CUDA backend needs cuda-bindings ({e}); install it with {INSTALL_HINT}"
        ) from e
    return driver


def error_text(status: Any) -> str:
    """The driver's name and description of ``status``."""
    driver = driver_module()
    try:
        status = driver.CUresult(int(status))
    except ValueError:
        return f"CUDA error {int(status)}"
    _, name = driver.cuGetErrorName(status)
    _, text = driver.cuGetErrorString(status)
    name = name.decode() if isinstance(name, bytes) else str(status)
    text = text.decode() if isinstance(text, bytes) else ""
    return f"{name}: {text}" if text else name


def call(fn: Any, *args: Any, what: str, error: type[CubejitError] = LaunchError) -> Any:
    """``fn(*args)`` of ``cuda.bindings.driver``: its value (a tuple when several), or
    ``error`` naming ``what`` failed and why."""
    status, *values = fn(*args)
    if status != 0:
        raise error(f"CUDA could not {what} ({error_text(status)})")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


@dataclass(frozen=True, slots=True)
class CudaLimits(DeviceLimits):
    """What one device allows, read from the driver; validation checks kernels against it."""

    name: str
    """The device's name, as the driver reports it."""
    compute_capability: tuple[int, int]
    """``(major, minor)``: ``(9, 0)`` on an H100 or H200."""
    max_shared_memory: int
    """Bytes of shared memory one block may use, all its buffers together: the device's
    opt-in maximum (227 KiB on an H100 or H200), which a kernel past 48 KiB reaches through the
    dynamic shared-memory attribute set when it is loaded."""


ARCHITECTURAL_LIMITS = CudaLimits(
    name="any CUDA device",
    compute_capability=(0, 0),
    max_units_per_cube=1024,
    max_cube_dim=(1024, 1024, 64),
    max_cube_count=(2**31 - 1, 65535, 65535),
    max_shared_memory=48 * 1024,
)
"""The limits every device since compute capability 3.0 shares: what a compiler with no
device in hand validates against."""


def arch_name(compute_capability: tuple[int, int]) -> str:
    """The NVRTC architecture that builds code for exactly this device: ``sm_90a`` for 9.0.
    From Hopper on, the ``a`` variant unlocks the chip's own instructions; its cubins run on
    that compute capability alone, which is all a cubin for one device needs."""
    major, minor = compute_capability
    return f"sm_{major}{minor}{'a' if major >= 9 else ''}"


@functools.cache
def _initialised() -> int:
    driver = driver_module()
    try:
        status, *_ = driver.cuInit(0)
    except Exception as e:
        raise BackendUnavailableError(
            f"no CUDA device was found: the NVIDIA driver library (libcuda) cannot be loaded ({e})"
        ) from e
    if status != 0:
        raise BackendUnavailableError(f"no CUDA device was found ({error_text(status)})")
    count = call(driver.cuDeviceGetCount, what="count devices", error=BackendUnavailableError)
    if count == 0:
        raise BackendUnavailableError("no CUDA device was found (the driver reports none)")
    return int(count)


def open_device(ordinal: int) -> tuple[Any, Any, CudaLimits]:
    """The device numbered ``ordinal``, its primary context (retained and made current on
    this thread) and its limits. The device and context come from
    :mod:`~cubejit.backends.cuda_opening` when :func:`cubejit.client` started opening them
    while the backend imported."""
    driver = driver_module()
    opened = cuda_opening.take(ordinal)
    count = _initialised()
    if not 0 <= ordinal < count:
        raise BackendUnavailableError(
            f"no CUDA device {ordinal}: this machine has {count} (0 to {count - 1})"
        )
    if opened is not None:
        device, context = driver.CUdevice(opened[0]), driver.CUcontext(opened[1])
    else:
        device = call(
            driver.cuDeviceGet, ordinal, what="open the device", error=BackendUnavailableError
        )
        context = call(
            driver.cuDevicePrimaryCtxRetain,
            device,
            what="retain the primary context",
            error=BackendUnavailableError,
        )
    call(
        driver.cuCtxSetCurrent,
        context,
        what="make the context current",
        error=BackendUnavailableError,
    )
    return device, context, read_limits(device)


def read_limits(device: Any) -> CudaLimits:
    """The limits of ``device``, read from the driver."""
    driver = driver_module()
    attr = driver.CUdevice_attribute

    def get(which: Any) -> int:
        return int(
            call(
                driver.cuDeviceGetAttribute,
                which,
                device,
                what="read a limit",
                error=BackendUnavailableError,
            )
        )

    raw = call(
        driver.cuDeviceGetName,
        256,
        device,
        what="read the device name",
        error=BackendUnavailableError,
    )
    return CudaLimits(
        name=bytes(raw).split(b"\0", 1)[0].decode(errors="replace"),
        compute_capability=(
            get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        ),
        max_units_per_cube=get(attr.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
        max_cube_dim=(
            get(attr.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
            get(attr.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
            get(attr.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z),
        ),
        max_cube_count=(
            get(attr.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
            get(attr.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
            get(attr.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
        ),
        max_shared_memory=max(
            get(attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
            get(attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        ),
    )
